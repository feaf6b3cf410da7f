// A run's row → its wire shape in api/CONTRACT.md, answered by the API and by Chat Mode's tools alike, with the links
// to it (the console, Temporal's UI, the trace).
import type { RunRecord } from '../../db/runs';
import type { TemporalConfig } from '../../temporal.config';
import { runWorkflowId } from '../../model/run-identity';

export interface Links {
  publicUrl: string;
  temporal: TemporalConfig;
  /** The tracing backend's trace page, `{trace_id}` standing for the id (CADRE_TRACE_URL). */
  traceUrl?: string;
}

/** Items of a run by where they stand; `pending` is what has not finished one way or another yet. */
export function runCounts(run: Pick<RunRecord, 'total' | 'done' | 'failed' | 'needs_review' | 'skipped'>) {
  return {
    total: run.total,
    pending: Math.max(0, run.total - run.done - run.failed - run.needs_review - run.skipped),
    done: run.done,
    failed: run.failed,
    needs_review: run.needs_review,
    skipped: run.skipped,
  };
}

export function runJson(run: RunRecord, links: Links) {
  const end = run.ended_at ?? (['running', 'paused', 'needs_review'].includes(run.status) ? new Date() : null);
  return {
    id: run.id,
    agent_id: run.agent_id,
    agent_name: run.agent_name,
    agent_version: run.agent_version,
    status: run.status,
    trigger: run.trigger,
    trigger_id: run.trigger_id ?? null,
    fired_at: run.fired_at ?? null,
    trace_id: run.trace_id ?? null,
    input: run.input,
    created_at: run.created_at,
    started_at: run.started_at,
    ended_at: run.ended_at,
    duration_ms: end ? end.getTime() - new Date(run.started_at ?? run.created_at).getTime() : null,
    counts: runCounts(run),
    error: run.error,
    called_by: run.parent_run_id
      ? { run_id: run.parent_run_id, item_seq: run.parent_item_seq ?? null, node_id: run.parent_node_id ?? null }
      : null,
    retry_of: run.retry_of ?? null,
    test_mode: run.dry_run ?? false,
    usage: {
      input_tokens: Number(run.usage?.input_tokens ?? 0),
      output_tokens: Number(run.usage?.output_tokens ?? 0),
      cost_usd: Number(run.usage?.cost_usd ?? 0),
    },
    links: {
      self: `${links.publicUrl}/v1/runs/${run.id}`,
      console: `${links.publicUrl}/runs/${run.id}`,
      temporal: `${links.temporal.uiUrl}/namespaces/${encodeURIComponent(links.temporal.namespace)}/workflows/${runWorkflowId(run.id)}`,
      trace: run.trace_id && links.traceUrl ? links.traceUrl.replaceAll('{trace_id}', run.trace_id) : null,
    },
  };
}
