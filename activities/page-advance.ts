// Moves a page of items through every set-based node (input, transform, branch, flag, output, state-store
// tools) in memory and in one transaction, stopping each item at the first node that needs a per-item call
// (model, external tool, a person, another agent). Those stops are returned to the page workflow as actions.
import { Context } from '@temporalio/activity';
import { applyStateOps, type StateOp } from '../db/state-store';
import { appendRunLog, recordNodeActivity, refreshRunCounts } from '../db/run-progress';
import type { AgentNode, AgentSpec } from '../model/agent';
import {
  applyTransform,
  ItemError,
  matches,
  nextNodeId,
  render,
  saveResult,
  type ItemData,
} from '../workflows/interpreter';
import { approvalDefaultOf, isToolName, toolDefinitions } from '../model/tools';
import { ActivityDeps, loadRun, loadSpec, type RunRow } from './deps';

export interface StepAction {
  seq: number;
  nodeId: string;
  /** Set when a person must decide first. */
  approvalId?: string;
  /** Set at a call_agent node: the page workflow runs the other agent's run as its child. */
  callAgent?: { wait: boolean };
  /** Set at a flag_for_review node: the item waits for this review's decision (db/reviews.ts). */
  reviewId?: string;
}

interface ItemRow {
  seq: number;
  status: string;
  data: ItemData;
  node_id: string | null;
  output: unknown;
  output_node: string | null;
  error: string | null;
}

type ToolNode = Extract<AgentNode, { kind: 'tool' }>;

/** The policy's rule for a tool: its own, or the nearest `prefix.*` (`mcp.crm.*` covers every tool of that server). */
function approvalRule(spec: AgentSpec, tool: string) {
  const own = spec.policy.approvals[tool];
  if (own) return own;
  const parts = tool.split('.');
  for (let n = parts.length - 1; n > 0; n--) {
    const rule = spec.policy.approvals[`${parts.slice(0, n).join('.')}.*`];
    if (rule) return rule;
  }
  return undefined;
}

export function approvalRequired(spec: AgentSpec, tool: string, args: unknown): boolean {
  const rule = approvalRule(spec, tool);
  if (!rule) return approvalDefaultOf(tool, args) === 'always';
  if (rule.mode === 'when') return rule.when !== undefined && matches(rule.when, args);
  return rule.mode === 'always';
}

export function stateOpFor(node: ToolNode, args: Record<string, unknown>): StateOp | undefined {
  const def = isToolName(node.tool) ? toolDefinitions[node.tool] : undefined;
  if (!def || !node.tool.startsWith('state.')) return undefined;
  const input = def.input.parse(args) as Record<string, unknown>;
  return { op: node.tool.slice('state.'.length), ...input } as StateOp;
}

export interface PageRange {
  runId: string;
  fromSeq: number;
  toSeq: number;
}

/**
 * Advances a page of a run whose row the caller has read (activities/run-phases.ts reads it once per phase).
 * `closingFollows`: the caller closes the run at once when no item stops, and the closing sets the run's counts.
 */
export function pageAdvancer({ knex }: Pick<ActivityDeps, 'knex'>) {
  return async (
    run: RunRow,
    { runId, fromSeq, toSeq }: PageRange,
    { closingFollows = false } = {},
  ): Promise<StepAction[]> => {
    const spec = await loadSpec(knex, run.agent_id, run.agent_version);
    const byId = new Map(spec.nodes.map((n) => [n.id, n]));
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';

    return knex.transaction(async (trx) => {
      const items: ItemRow[] = await trx('run_items')
        .where({ run_id: runId })
        .andWhere('seq', '>=', fromSeq)
        .andWhere('seq', '<', toSeq)
        .whereIn('status', ['pending', 'running', 'needs_review'])
        .orderBy('seq')
        .select('seq', 'status', 'data', 'node_id', 'output', 'output_node', 'error')
        .forUpdate();
      const counters = new Map<string, { kind: string; in: number; done: number; failed: number }>();
      const count = (node: AgentNode, field: 'done' | 'failed') => {
        const c = counters.get(node.id) ?? { kind: node.kind, in: 0, done: 0, failed: 0 };
        c.in += 1;
        c[field] += 1;
        counters.set(node.id, c);
      };
      const logs: Parameters<typeof appendRunLog>[1] = [];
      const actions: StepAction[] = [];
      const approvals: Record<string, unknown>[] = [];
      const reviews: Record<string, unknown>[] = [];
      const flagged: number[] = []; // items waiting at a flag node, newly or still
      const changed = new Set<ItemRow>();

      // Walks one item until it finishes, fails, or stops at a node handled elsewhere. Returns the state
      // operation it waits on, if any, so a whole page of increments can be applied in one batch.
      const walk = (item: ItemRow): StateOp | undefined => {
        while (item.node_id) {
          const node = byId.get(item.node_id)!;
          try {
            switch (node.kind) {
              case 'input':
              case 'branch':
                break;
              case 'transform':
                item.data = applyTransform(node, item.data);
                break;
              case 'flag_for_review':
                if (!node.when || matches(node.when, item.data)) {
                  if (item.status !== 'needs_review') {
                    const reason = render(node.reason, item.data);
                    item.status = 'needs_review';
                    item.error = `flagged for review: ${reason}`;
                    count(node, 'done');
                    changed.add(item);
                    reviews.push({
                      id: crypto.randomUUID(),
                      workspace_id: run.workspace_id,
                      run_id: runId,
                      item_seq: item.seq,
                      node_id: node.id,
                      workflow_id: workflowId,
                      reason,
                    });
                  }
                  flagged.push(item.seq);
                  return undefined;
                }
                break;
              case 'output':
                item.output = node.fields
                  ? Object.fromEntries(node.fields.map((f) => [f, item.data[f] ?? null]))
                  : item.data;
                item.output_node = node.id;
                break;
              case 'tool': {
                const args = render(node.arguments, item.data) as Record<string, unknown>;
                const op = approvalRequired(spec, node.tool, args) ? undefined : stateOpFor(node, args);
                if (op) return op;
                actions.push(stop(item, node, node.tool, args));
                return undefined;
              }
              case 'approval':
                if (node.when && !matches(node.when, item.data)) break;
                actions.push(stop(item, node, 'approval', item.data));
                return undefined;
              default: // llm, retrieve, call_agent
                actions.push(stop(item, node));
                return undefined;
            }
          } catch (err) {
            if (!(err instanceof ItemError) && !(err instanceof Error && err.name === 'ZodError')) throw err;
            item.status = 'failed';
            item.error = `${node.id}: ${err.message}`;
            count(node, 'failed');
            logs.push({ run_id: runId, level: 'warn', node_id: node.id, item_seq: item.seq, message: item.error });
            changed.add(item);
            return undefined;
          }
          count(node, 'done');
          item.node_id = nextNodeId(node, item.data);
          changed.add(item);
        }
        if (item.status !== 'done') {
          item.status = 'done';
          changed.add(item);
        }
        return undefined;
      };

      const stop = (item: ItemRow, node: AgentNode, tool?: string, args?: unknown): StepAction => {
        const action: StepAction = {
          seq: item.seq,
          nodeId: node.id,
          ...(node.kind === 'call_agent' ? { callAgent: { wait: node.wait } } : {}),
        };
        const needsPerson =
          node.kind === 'approval' || (node.kind === 'tool' && approvalRequired(spec, node.tool, args));
        if (needsPerson && item.status !== 'needs_review') {
          item.status = 'needs_review';
          changed.add(item);
          approvals.push({
            id: crypto.randomUUID(),
            workspace_id: run.workspace_id,
            run_id: runId,
            item_seq: item.seq,
            node_id: node.id,
            workflow_id: workflowId,
            tool,
            message: node.kind === 'approval' ? render(node.message, item.data) : null,
            arguments: JSON.stringify(args ?? {}),
            timeout_at: new Date(Date.now() + spec.policy.approval_timeout_seconds * 1000),
          });
        } else if (node.kind === 'llm' && item.status === 'needs_review') {
          // A model step stopped for its tool calls' approval: the item keeps waiting, and the page workflow
          // already holds it (activities/model-approvals.ts).
        } else if (!needsPerson && item.status !== 'running') {
          item.status = 'running';
          changed.add(item);
        }
        return action;
      };

      let waiting = items.map((item) => ({ item, op: walk(item) })).filter((w) => w.op !== undefined);
      while (waiting.length > 0) {
        // Group by the node they wait at, apply that node's operations in item order, then walk on.
        const results = await applyStateOps(
          trx,
          run.agent_id,
          waiting.map((w) => w.op!),
        );
        waiting = waiting
          .map(({ item }, i) => {
            const node = byId.get(item.node_id!) as ToolNode;
            item.data = saveResult(item.data, node.save_as, results[i]);
            count(node, 'done');
            item.node_id = nextNodeId(node, item.data);
            changed.add(item);
            return { item, op: walk(item) };
          })
          .filter((w) => w.op !== undefined);
      }

      if (changed.size > 0) {
        const rows = [...changed].map((i) => ({
          seq: i.seq,
          status: i.status,
          data: i.data,
          node_id: i.node_id,
          output: i.output ?? null,
          output_node: i.output_node,
          error: i.error,
        }));
        // One statement for the page: the rows travel as one JSON parameter.
        await trx.raw(
          `update run_items t set status = u.status, data = u.data, node_id = u.node_id, output = u.output,
               output_node = u.output_node, error = u.error, updated_at = now()
             from jsonb_to_recordset(:rows::jsonb) as u(seq int, status text, data jsonb, node_id text,
               output jsonb, output_node text, error text)
             where t.run_id = :runId and t.seq = u.seq`,
          { runId, rows: JSON.stringify(rows) },
        );
      }
      if (approvals.length > 0) {
        await trx('approvals').insert(approvals).onConflict(['run_id', 'item_seq', 'node_id', 'call_id']).ignore();
      }
      if (reviews.length > 0) await trx('item_reviews').insert(reviews).onConflict().ignore();
      // Flagged items wait in this page's workflow for their review, as items wait for approvals.
      if (flagged.length > 0) {
        const pendingReviews = await trx('item_reviews')
          .where({ run_id: runId, status: 'pending' })
          .whereIn('item_seq', flagged)
          .select('id', 'item_seq', 'node_id');
        for (const r of pendingReviews) actions.push({ seq: r.item_seq, nodeId: r.node_id, reviewId: r.id });
      }
      await recordNodeActivity(trx, runId, counters);
      await appendRunLog(trx, logs);
      if (actions.length > 0 || !closingFollows) await refreshRunCounts(trx, runId);

      // Items waiting on a person carry the approval id the page workflow waits for (a model step's approvals,
      // keyed by call, reach the workflow from the step itself).
      if (actions.length === 0) return actions;
      const pending = await trx('approvals')
        .where({ run_id: runId })
        .whereNull('call_id')
        .whereIn(
          'item_seq',
          actions.map((a) => a.seq),
        )
        .select('id', 'item_seq', 'node_id');
      for (const a of actions) {
        a.approvalId = pending.find((p) => p.item_seq === a.seq && p.node_id === a.nodeId)?.id;
      }
      return actions;
    });
  };
}

export function createPageAdvanceActivities(deps: ActivityDeps) {
  const advance = pageAdvancer(deps);
  return {
    advancePage: async (range: PageRange): Promise<StepAction[]> =>
      advance(await loadRun(deps.knex, range.runId), range),
  };
}
