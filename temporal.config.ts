// Typed, validated Temporal settings. TEMPORAL_ADDRESS set → use that cluster (or Temporal Cloud) and start
// no server; unset → the embedded Temporal CLI dev server on CADRE_TEMPORAL_PORT.
import fs from 'node:fs';
import { z } from 'zod';
import { envOptionalString, envPort, parseEnv } from './cadre.config';

const positiveInt = z.coerce.number().int().positive();

export const temporalEnvSchema = z.object({
  TEMPORAL_ADDRESS: envOptionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_API_KEY: envOptionalString,
  TEMPORAL_TLS_CERT: envOptionalString,
  TEMPORAL_TLS_KEY: envOptionalString,
  TEMPORAL_UI_URL: envOptionalString,
  TEMPORAL_TASK_QUEUE: z.string().default('cadre-runs'),
  CADRE_TEMPORAL_PORT: envPort.default(7233),
  CADRE_TEMPORAL_UI_PORT: envPort.default(8233),
  CADRE_WORKER_MAX_ACTIVITIES: positiveInt.default(100),
  CADRE_WORKER_MAX_WORKFLOW_TASKS: positiveInt.default(40),
  CADRE_WORKFLOW_THREAD: z.enum(['true', 'false']).optional(),
});

/** Custom search attributes every run workflow carries, so Temporal's visibility finds an agent's runs. */
export const searchAttributes = {
  CadreWorkspaceId: 'Keyword',
  CadreAgentId: 'Keyword',
  CadreTrigger: 'Keyword',
} as const;

export function loadTemporalConfig(env: NodeJS.ProcessEnv = process.env) {
  const e = parseEnv(temporalEnvSchema, env);
  const embedded = e.TEMPORAL_ADDRESS === undefined;
  const workflowThread = (e.CADRE_WORKFLOW_THREAD ?? (embedded ? 'false' : 'true')) === 'true';
  const tls =
    e.TEMPORAL_TLS_CERT && e.TEMPORAL_TLS_KEY
      ? { clientCertPair: { crt: fs.readFileSync(e.TEMPORAL_TLS_CERT), key: fs.readFileSync(e.TEMPORAL_TLS_KEY) } }
      : e.TEMPORAL_API_KEY
        ? true // Temporal Cloud API keys require TLS
        : undefined;
  return {
    embedded,
    address: e.TEMPORAL_ADDRESS ?? `127.0.0.1:${e.CADRE_TEMPORAL_PORT}`,
    namespace: e.TEMPORAL_NAMESPACE,
    apiKey: e.TEMPORAL_API_KEY,
    tls,
    uiUrl: (e.TEMPORAL_UI_URL ?? `http://localhost:${e.CADRE_TEMPORAL_UI_PORT}`).replace(/\/$/, ''),
    embeddedPort: e.CADRE_TEMPORAL_PORT,
    embeddedUiPort: e.CADRE_TEMPORAL_UI_PORT,
    taskQueue: e.TEMPORAL_TASK_QUEUE,
    worker: {
      maxConcurrentActivityTaskExecutions: e.CADRE_WORKER_MAX_ACTIVITIES,
      maxConcurrentWorkflowTaskExecutions: e.CADRE_WORKER_MAX_WORKFLOW_TASKS,
      // Eager dispatch (see scripts/temporal-cli.ts) for every step a workflow task schedules, as far as free slots
      // allow, rather than the SDK's default of 3: when several steps of a page end together, the rest would
      // otherwise wait for a matching round trip.
      maxEagerActivityReservationsPerWorkflowTask: e.CADRE_WORKER_MAX_ACTIVITIES,
      // With the embedded Temporal (one host, `npm start`), workflows run in their sandbox on the worker's main
      // thread (the SDK's debugMode), not in a thread of their own, which held a V8 isolate with its own copy of the
      // SDK, gRPC and protobuf: about 20 MB of an idle worker (npm run bench:footprint). A workflow task that runs
      // longer than the limit still fails, as in the thread (debugMode alone would wait forever). Against a Temporal
      // cluster (production) workers keep the SDK's thread, so workflow code never shares the event loop of the
      // activities. CADRE_WORKFLOW_THREAD overrides either default.
      ...(workflowThread ? {} : { debugMode: true, isolateExecutionTimeout: '5s' as const }),
    },
    timeouts: {
      /** Database and set-based page activities: short, retried. */
      db: '1 minute',
      /** Tool calls (HTTP, SMTP, state store) that may wait on another system. */
      tool: '2 minutes',
      /** Model calls: a tool-use loop of several turns. */
      llm: '10 minutes',
    },
    searchAttributes,
  };
}

export type TemporalConfig = ReturnType<typeof loadTemporalConfig>;
