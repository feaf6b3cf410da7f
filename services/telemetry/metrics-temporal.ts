// The worker's Temporal SDK metrics (task slots, schedule-to-start latency, polls, sticky cache) come from the SDK's
// own Prometheus exporter, which runs in its Rust core on a port of its own: nothing to count by hand.
import type { TelemetryOptions } from '@temporalio/worker';
import type { CadreConfig } from '../../cadre.config';

/** Runtime.install's telemetryOptions: the exporter on CADRE_METRICS_HOST:CADRE_TEMPORAL_METRICS_PORT, if set. */
export function temporalMetricsOptions(metrics: CadreConfig['metrics']): TelemetryOptions | undefined {
  if (metrics.temporalPort === undefined) return undefined;
  const host = metrics.host.includes(':') ? `[${metrics.host}]` : metrics.host;
  return {
    metrics: {
      // Prometheus's naming conventions (counters end in _total, durations in seconds named so), as Cadre's own.
      prometheus: {
        bindAddress: `${host}:${metrics.temporalPort}`,
        countersTotalSuffix: true,
        unitSuffix: true,
        useSecondsForDurations: true,
      },
    },
  };
}
