// Cadre's own Prometheus metrics (prom-client), one registry per process: the web and each worker expose theirs and
// Prometheus sums them. Counters are incremented where the event happens, by the process it happens in, so a
// restart resets only that process's series (rate() and increase() take resets in their stride) and nothing is
// counted twice across processes. Labels are bounded: agent ids, statuses, kinds; never run, item or key ids.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
// Gauges named like counters, which Prometheus's linter (promtool check metrics) refuses; their by-type
// counterparts (nodejs_active_handles{type}, …) stay.
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
  metricsRegistry.removeSingleMetric(name);

const registers = [metricsRegistry];

/** Opened runs (every way a run starts: API, console, schedules, triggers, chains, call_agent steps). */
export const runsStarted = new Counter({
  name: 'cadre_runs_started_total',
  help: 'Runs opened, by agent and trigger',
  labelNames: ['agent_id', 'trigger'] as const,
  registers,
});

export const runsEnded = new Counter({
  name: 'cadre_runs_ended_total',
  help: 'Runs that reached their final status (completed, failed, needs_review, cancelled, skipped), by agent',
  labelNames: ['agent_id', 'status'] as const,
  registers,
});

export const itemsProcessed = new Counter({
  name: 'cadre_items_processed_total',
  help: "Items of ended runs by their final status (done, failed, needs_review, skipped), counted at the run's end",
  labelNames: ['agent_id', 'status'] as const,
  registers,
});

export const runDuration = new Histogram({
  name: 'cadre_run_duration_seconds',
  help: 'From a run being opened to its end, by agent',
  labelNames: ['agent_id'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600],
  registers,
});

export const stepDuration = new Histogram({
  name: 'cadre_step_duration_seconds',
  help: "One per-item step's attempt that settled its item (model, tool, retrieval, approval), by node kind and outcome",
  labelNames: ['kind', 'outcome'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers,
});

export const approvalWait = new Histogram({
  name: 'cadre_approval_wait_seconds',
  help: 'From an approval being asked to its decision, by outcome (approved, rejected, timed_out)',
  labelNames: ['outcome'] as const,
  buckets: [1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600],
  registers,
});

export const deliveries = new Counter({
  name: 'cadre_deliveries_total',
  help: 'Webhook, form, event and mail deliveries, by source and outcome (accepted, rejected, batched)',
  labelNames: ['source', 'outcome'] as const,
  registers,
});

export const modelTokens = new Counter({
  name: 'cadre_model_tokens_total',
  help: 'Model tokens used, by agent, model and type (input, output, cache_read)',
  labelNames: ['agent_id', 'model', 'type'] as const,
  registers,
});

export const modelCost = new Counter({
  name: 'cadre_model_cost_usd_total',
  help: 'Model cost in US dollars at list prices, by agent and model',
  labelNames: ['agent_id', 'model'] as const,
  registers,
});

export const connectorCalls = new Counter({
  name: 'cadre_connector_calls_total',
  help: 'Tool and connector calls, by kind (http, sql, slack, …; mcp and api for connection tools)',
  labelNames: ['kind'] as const,
  registers,
});

export const connectorErrors = new Counter({
  name: 'cadre_connector_errors_total',
  help: 'Tool and connector calls that threw, by kind',
  labelNames: ['kind'] as const,
  registers,
});

export const rateLimitRefusals = new Counter({
  name: 'cadre_rate_limit_refusals_total',
  help: 'Requests refused by a rate limit, by limit (api keys, forms, sign-in, …)',
  labelNames: ['limit'] as const,
  registers,
});

let backlogCount: (() => Promise<number>) | undefined;
new Gauge({
  name: 'cadre_run_start_backlog',
  help: "Runs opened more than ten seconds ago whose workflow start has not landed (the start sweep's backlog)",
  registers,
  async collect() {
    if (!backlogCount) return;
    // The database down is when the rest of the page matters most: this one figure is unknown (NaN), not the page.
    this.set(await backlogCount().catch(() => NaN));
  },
});

/**
 * The web process's source of the start backlog: read from the database at scrape time, so it is right whichever
 * process opened the runs. Every web process reports the same figure (take max(), not sum(), across them); a
 * worker reports 0.
 */
export function countRunStartBacklog(count: () => Promise<number>): void {
  backlogCount = count;
}

/** A run's end: its status, its duration as the API reports it (started → ended) and its items' final statuses. */
export function recordRunEnded(
  agentId: string,
  status: string,
  seconds: number,
  items: { done: number; failed: number; needs_review: number; skipped: number },
): void {
  runsEnded.inc({ agent_id: agentId, status });
  runDuration.observe({ agent_id: agentId }, Math.max(0, seconds));
  for (const [itemStatus, n] of Object.entries(items))
    if (n > 0) itemsProcessed.inc({ agent_id: agentId, status: itemStatus }, n);
}

/** A run opened (not a replay of one an earlier request or attempt opened). */
export function recordRunOpened(agentId: string, trigger: string): void {
  runsStarted.inc({ agent_id: agentId, trigger });
}

/** Tokens and cost a model step added to its run's usage (what GET /v1/runs/{id} reports as the run's usage). */
export function recordModelUsage(
  agentId: string,
  model: string,
  usage: { input_tokens: number; output_tokens: number; cache_read_tokens: number; cost_usd: number },
): void {
  const tokens = { input: usage.input_tokens, output: usage.output_tokens, cache_read: usage.cache_read_tokens };
  for (const [type, n] of Object.entries(tokens)) if (n > 0) modelTokens.inc({ agent_id: agentId, model, type }, n);
  if (usage.cost_usd > 0) modelCost.inc({ agent_id: agentId, model }, usage.cost_usd);
}
