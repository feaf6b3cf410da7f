// A real Jaeger (v1.76.0, built once by scripts/observability-tools.sh): its all-in-one pipeline (OTLP/HTTP in, an
// in-memory store, the query API) on free loopback ports, and the traces its query API answers.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from './ports';
import { waitFor } from '../../scripts/supervisor';

export const jaegerBin = path.resolve(__dirname, '../../.tools/bin/jaeger');

export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  logs: { fields: { key: string; value: unknown }[] }[];
  processID: string;
}
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

export interface Jaeger {
  child: ChildProcess;
  /** Where processes send OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT). */
  otlpUrl: string;
  queryUrl: string;
  /** The trace once `ready` holds for it (spans arrive in batches, from several processes). */
  trace(traceId: string, ready: (t: JaegerTrace) => boolean, timeoutMs?: number): Promise<JaegerTrace>;
  stop(): Promise<void>;
}

/** Starts Jaeger with its configuration and log in `dir`. */
export async function startJaeger(dir: string): Promise<Jaeger> {
  const [otlp, query, queryGrpc] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'jaeger.yaml');
  fs.writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], exporters: [jaeger_storage_exporter] }
  telemetry: { metrics: { level: none }, logs: { level: warn } }
extensions:
  jaeger_storage: { backends: { memstore: { memory: { max_traces: 10000 } } } }
  jaeger_query:
    storage: { traces: memstore }
    http: { endpoint: "127.0.0.1:${query}" }
    grpc: { endpoint: "127.0.0.1:${queryGrpc}" }
receivers:
  otlp: { protocols: { http: { endpoint: "127.0.0.1:${otlp}" } } }
exporters:
  jaeger_storage_exporter: { trace_storage: memstore }
`,
  );
  const out = fs.openSync(path.join(dir, 'jaeger.log'), 'a');
  const child = spawn(jaegerBin, [`--config=file:${config}`], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const queryUrl = `http://127.0.0.1:${query}`;
  await waitFor('Jaeger', async () => void (await fetch(`${queryUrl}/api/services`)).json(), 60_000);
  return {
    child,
    otlpUrl: `http://127.0.0.1:${otlp}`,
    queryUrl,
    async trace(traceId, ready, timeoutMs = 60_000) {
      let trace: JaegerTrace | undefined;
      await waitFor(
        `trace ${traceId} in Jaeger`,
        async () => {
          const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
          trace = res.ok ? ((await res.json()) as { data: JaegerTrace[] }).data[0] : undefined;
          if (!trace || !ready(trace)) throw new Error('not complete yet');
        },
        timeoutMs,
      ).catch((err: Error) => {
        // What the trace holds, to tell a span that never came from one named otherwise.
        const spans = trace?.spans.map(
          (s) => `${trace!.processes[s.processID]?.serviceName} ${s.operationName} ${JSON.stringify(s.tags)}`,
        );
        throw new Error(`${err.message}; it holds:\n${spans?.join('\n') ?? 'nothing'}`);
      });
      return trace!;
    },
    stop: () => stopChild(child),
  };
}

/** SIGTERM, then SIGKILL after 10 s. */
export function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  return Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))]).then(() => void child.kill('SIGKILL'));
}

export const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;
export const parentOf = (trace: JaegerTrace, span: JaegerSpan) =>
  trace.spans.find((s) => s.spanID === span.references.find((r) => r.refType === 'CHILD_OF')?.spanID);
/** The span, its parent, and so on up to its root. */
export function ancestry(trace: JaegerTrace, span: JaegerSpan): JaegerSpan[] {
  const chain = [span];
  for (let p = parentOf(trace, span); p; p = parentOf(trace, p)) chain.push(p);
  return chain;
}
/** A trace's roots: spans with no parent (a span link is a FOLLOWS_FROM reference, not a parent). */
export const rootsOf = (trace: JaegerTrace) =>
  trace.spans.filter((s) => !s.references.some((r) => r.refType === 'CHILD_OF'));
