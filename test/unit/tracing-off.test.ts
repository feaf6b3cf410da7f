// Tracing off (no OTLP endpoint) costs nothing: the web's and the worker's start-up load none of the OpenTelemetry
// SDK, its instrumentations or Temporal's interceptors (the idle memory of every process is measured). With an
// endpoint set, the same start-up loads them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** The OpenTelemetry SDK modules a process has loaded after tracing-start and the Temporal connection helpers. */
function sdkModulesLoaded(env: NodeJS.ProcessEnv): string[] {
  const script = `
    require('./services/telemetry/tracing-start');
    require('./scripts/connections');
    const { tracingWorkerOptions } = require('./services/telemetry/tracing');
    tracingWorkerOptions();
    const sdk = /node_modules\\/(@opentelemetry\\/(sdk-|instrumentation|exporter-|resources)|@temporalio\\/interceptors-opentelemetry)/;
    console.log(JSON.stringify([...new Set(Object.keys(require.cache).filter((f) => sdk.test(f)).map((f) => f.split('node_modules/').pop().split('/').slice(0, 2).join('/')))]));
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop()!);
}

describe('tracing off', () => {
  it('loads no OpenTelemetry SDK package without an OTLP endpoint', () => {
    assert.deepEqual(sdkModulesLoaded({}), []);
  });

  it('loads the SDK, the instrumentations and the Temporal interceptors with one', () => {
    const loaded = sdkModulesLoaded({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    for (const name of [
      '@opentelemetry/sdk-node',
      '@opentelemetry/instrumentation-pg',
      '@temporalio/interceptors-opentelemetry',
    ]) {
      assert.ok(loaded.includes(name), `${name} in ${loaded.join(', ')}`);
    }
  });
});
