// OpenTelemetry tracing, configured the standard way (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, …) and off unless an OTLP endpoint is named. Off, none
// of the SDK, its exporters, instrumentations or Temporal's interceptors is loaded (they are required on demand below,
// never imported; only prom-client loads the bare @opentelemetry/api), so a process without tracing keeps its idle
// memory; the helpers then just run what they wrap (test/integration/tracing-off.test.ts).
//
// On: the Node SDK with the http, express and pg instrumentations (defaults that record no SQL parameter values and
// no headers; query parameters that carry credentials are redacted), spans exported over OTLP/HTTP (protobuf), and
// Temporal's interceptors carrying the trace from the client's workflow start through workflow tasks and activities.
import type * as otel from '@opentelemetry/api';
import type { ClientInterceptors } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';

type Api = typeof import('@opentelemetry/api');
type SpanProcessor = import('@opentelemetry/sdk-trace').SpanProcessor;
type ReadableSpan = import('@opentelemetry/sdk-trace').ReadableSpan;
type Resource = import('@opentelemetry/resources').Resource;

interface Tracing {
  api: Api;
  tracer: otel.Tracer;
  processor: SpanProcessor;
  resource: Resource;
  shutdown(): Promise<void>;
}

let tracing: Tracing | undefined;

/** Query parameters whose values never reach a span: the instrumentation's own list and the ones Cadre's links use. */
const redactedQueryParams = [
  'sig',
  'Signature',
  'AWSAccessKeyId',
  'X-Goog-Signature',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
  'code',
  'state',
  'token',
  'access_token',
  'id_token',
  'refresh_token',
  'key',
  'api_key',
  'secret',
  'password',
  'session',
];

/** Tracing is on when an OTLP endpoint is named and the SDK is not disabled (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none). */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return Boolean(endpoint) && env.OTEL_SDK_DISABLED?.trim() !== 'true' && env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
}

export function tracingEnabled(): boolean {
  return tracing !== undefined;
}

/**
 * Starts the SDK when tracing is configured. Must run before http, express or pg are first required (the
 * instrumentations patch them as they load): scripts/web.ts and scripts/worker.ts import ./tracing-start first.
 */
export function startTracing(defaultServiceName: string): boolean {
  if (tracing || !tracingConfigured()) return tracing !== undefined;
  // Cadre's metrics are Prometheus's (/metrics) and its logs pino's: the SDK would otherwise also push both over OTLP.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on, and synchronously: an
     instrumentation loaded by a later import() would patch http, express and pg after they were already loaded */
  const api = require('@opentelemetry/api') as Api;
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  const resources = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation, ExpressLayerType } =
    require('@opentelemetry/instrumentation-express') as typeof import('@opentelemetry/instrumentation-express');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  /* eslint-enable @typescript-eslint/no-require-imports */

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the process's default name. Each
  // process has its own service.instance.id and process.pid: a trace shows which web or worker of a cluster ran what.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': defaultServiceName }))
    .merge(
      resources.detectResources({
        detectors: [resources.serviceInstanceIdDetector, resources.processDetector, resources.envDetector],
      }),
    );
  // One processor for the SDK's spans and the workflow spans the Temporal sink hands over (tracingWorkerOptions).
  // Given its own processor, the SDK no longer reads OTEL_BSP_*: they are read here instead.
  const processor = new BatchSpanProcessor({
    exporter: new OTLPTraceExporter(),
    maxQueueSize: envNumber('OTEL_BSP_MAX_QUEUE_SIZE'),
    scheduledDelayMillis: envNumber('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: envNumber('OTEL_BSP_EXPORT_TIMEOUT'),
    maxExportBatchSize: envNumber('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  });
  const sdk = new NodeSDK({
    resource,
    autoDetectResources: false,
    spanProcessors: [processor],
    instrumentations: [
      new HttpInstrumentation({
        redactedQueryParams,
        redactedQueryParamsServer: redactedQueryParams,
        // Probes and scrapes are not what anyone traces.
        ignoreIncomingRequestHook: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url?.split('?')[0] ?? ''),
      }),
      // The routers and the route's handler, not one span for each middleware a request passes through (routers
      // stay: the instrumentation builds http.route from them).
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
    ],
  });
  sdk.start();
  tracing = {
    api,
    tracer: api.trace.getTracer('cadre'),
    processor,
    resource,
    shutdown: () => sdk.shutdown(),
  };
  return true;
}

function envNumber(name: string): number | undefined {
  const n = Number(process.env[name]?.trim() || NaN);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Sends what is buffered and stops; call before the process exits (spans are exported in batches). */
export async function shutdownTracing(): Promise<void> {
  const t = tracing;
  tracing = undefined;
  await t?.shutdown().catch(() => undefined);
}

/** The trace the caller runs in, when tracing is on and the trace is sampled (an unsampled one is never stored). */
export function currentTraceId(): string | undefined {
  if (!tracing) return undefined;
  const ctx = tracing.api.trace.getActiveSpan()?.spanContext();
  if (!ctx || !tracing.api.isSpanContextValid(ctx)) return undefined;
  return ctx.traceFlags & tracing.api.TraceFlags.SAMPLED ? ctx.traceId : undefined;
}

/** Adds attributes to the span the caller runs in (the run a request opened, say); nothing with tracing off. */
export function setActiveSpanAttributes(attributes: SpanAttributes): void {
  tracing?.api.trace.getActiveSpan()?.setAttributes(defined(attributes));
}

/** An event on the span the caller runs in (an item that failed in its step's activity); nothing with tracing off. */
export function addActiveSpanEvent(name: string, attributes: SpanAttributes): void {
  tracing?.api.trace.getActiveSpan()?.addEvent(name, defined(attributes));
}

export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined>;

/** What code inside a span may add to it; does nothing with tracing off. */
export interface SpanRecorder {
  setAttributes(attributes: SpanAttributes): void;
  addEvent(name: string, attributes?: SpanAttributes): void;
}

const noRecorder: SpanRecorder = { setAttributes: () => undefined, addEvent: () => undefined };

const defined = (attributes: SpanAttributes): otel.Attributes =>
  Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== undefined)) as otel.Attributes;

/**
 * Runs `fn` in a span named `name`, a child of the active span; with `newTrace`, the root of a trace of its own that
 * links to the active span (a poll or a mail that starts runs, inside a long-lived workflow or listener). A thrown
 * error marks the span failed, with the error's message. Attributes must never hold secrets or prompt text.
 */
export async function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: SpanRecorder) => Promise<T>,
  opts: { kind?: 'internal' | 'client' | 'server' | 'consumer'; newTrace?: boolean } = {},
): Promise<T> {
  if (!tracing) return fn(noRecorder);
  const { api, tracer } = tracing;
  const parent = api.trace.getActiveSpan()?.spanContext();
  const kinds = {
    internal: api.SpanKind.INTERNAL,
    client: api.SpanKind.CLIENT,
    server: api.SpanKind.SERVER,
    consumer: api.SpanKind.CONSUMER,
  };
  const options: otel.SpanOptions = {
    kind: kinds[opts.kind ?? 'internal'],
    attributes: defined(attributes),
    root: opts.newTrace,
    links: opts.newTrace && parent && api.isSpanContextValid(parent) ? [{ context: parent }] : undefined,
  };
  return tracer.startActiveSpan(name, options, async (span) => {
    const recorder: SpanRecorder = {
      setAttributes: (a) => span.setAttributes(defined(a)),
      addEvent: (n, a) => span.addEvent(n, a && defined(a)),
    };
    try {
      return await fn(recorder);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      span.addEvent(
        'exception',
        defined({ 'exception.type': err instanceof Error ? err.name : 'Error', 'exception.message': message }),
      );
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Temporal client interceptors that start each workflow (and signal it) in the caller's trace; none with tracing off. */
export function tracingClientInterceptors(): ClientInterceptors | undefined {
  if (!tracing) return undefined;
  const { OpenTelemetryWorkflowClientInterceptor } = temporalOtel();
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * A worker's interceptors: workflow tasks and activities continue the trace their workflow was started in. Workflow
 * spans are made inside the sandbox and handed to this process through a sink. Nothing with tracing off.
 */
export function tracingWorkerOptions(): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  const t = temporalOtel();
  const { processor, resource } = tracing;
  // The interceptors' sink hands over spans of the OpenTelemetry JS 1.x shape (parentSpanId,
  // instrumentationLibrary); the 2.x exporter reads parentSpanContext and instrumentationScope.
  const workflowSpans = {
    onStart: () => undefined,
    onEnd: (
      span: ReadableSpan & { parentSpanId?: string; instrumentationLibrary?: ReadableSpan['instrumentationScope'] },
    ) =>
      processor.onEnd({
        ...span,
        parentSpanContext:
          span.parentSpanContext ??
          (span.parentSpanId
            ? {
                traceId: span.spanContext().traceId,
                spanId: span.parentSpanId,
                traceFlags: span.spanContext().traceFlags,
              }
            : undefined),
        instrumentationScope: span.instrumentationScope ?? span.instrumentationLibrary ?? { name: 'temporal-workflow' },
      }),
    forceFlush: () => processor.forceFlush(),
    shutdown: async () => undefined,
  };
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new t.OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new t.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      workflowModules: [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
    },
    sinks: {
      exporter: t.makeWorkflowExporter(
        workflowSpans as unknown as Parameters<typeof t.makeWorkflowExporter>[0],
        resource as unknown as Parameters<typeof t.makeWorkflowExporter>[1],
      ),
    },
  };
}

function temporalOtel(): typeof import('@temporalio/interceptors-opentelemetry') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when tracing is on
  return require('@temporalio/interceptors-opentelemetry');
}
