// How a page's items move through the set-based nodes (input, transform, branch, flag, output, state-store tools),
// in memory: each item walks until it finishes, fails, or stops at a node that needs a per-item call (model,
// external tool, a person, another agent). What the walk did is collected for the caller to write: items changed,
// node counters, log lines, approvals and reviews to record, and the stops (actions) for the page workflow.
// No I/O here: page-advance.ts walks a page read from the database inside its transaction, and run-lifecycle.ts
// (settleAtOnce) walks a small run's freshly parsed items before anything is written.
import type { StateOp } from '../db/state-store';
import type { appendRunLog } from '../db/run-progress';
import type { AgentNode, AgentSpec } from '../model/agent';
import {
  applyTransform,
  ItemError,
  matches,
  nextNodeId,
  render,
  saveResult,
  type ItemData,
} from '../model/interpreter';
import { approvalDefaultOf, isToolName, toolDefinitions } from '../model/tools';
import type { RunRow } from './deps';
import { wouldAsk } from './effects-ledger';

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

export interface ItemRow {
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

export type NodeCounters = Map<string, { kind: string; in: number; done: number; failed: number }>;

/** Why a tool node's call cannot be made at all (a write through a read-only connection), said before any approval. */
export type ToolRefusal = (tool: string, args: Record<string, unknown>) => string | undefined;

/** A walk over one page of a run (`workflowId`: the workflow that waits on the page's people). */
export function pageWalker(
  spec: AgentSpec,
  run: Pick<RunRow, 'id' | 'workspace_id' | 'dry_run'>,
  workflowId: string,
  refuse?: ToolRefusal,
) {
  const byId = new Map(spec.nodes.map((n) => [n.id, n]));
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
  // A test run on past items asks no one: who would have been asked is recorded, and the item goes on.
  const planned: ReturnType<typeof wouldAsk>[] = [];
  const flagged: number[] = []; // items waiting at a flag node, newly or still
  const changed = new Set<ItemRow>();

  /** What a review and an approval both record: the item, the node, and the workflow that waits on the person. */
  const waitingOn = (item: ItemRow, node: AgentNode) => ({
    id: crypto.randomUUID(),
    workspace_id: run.workspace_id,
    run_id: run.id,
    item_seq: item.seq,
    node_id: node.id,
    workflow_id: workflowId,
  });

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
            if ((!node.when || matches(node.when, item.data)) && run.dry_run) {
              const reason = render(node.reason, item.data);
              planned.push(wouldAsk(run.id, item.seq, node.id, 'review', null, item.data, `would flag: ${reason}`));
            } else if (!node.when || matches(node.when, item.data)) {
              if (item.status !== 'needs_review') {
                const reason = render(node.reason, item.data);
                item.status = 'needs_review';
                item.error = `flagged for review: ${reason}`;
                count(node, 'done');
                changed.add(item);
                reviews.push({ ...waitingOn(item, node), reason });
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
            // A call that would fail fails here, rather than after a reviewer approved it.
            const refused = refuse?.(node.tool, args);
            if (refused) throw new ItemError(refused);
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
        logs.push({ run_id: run.id, level: 'warn', node_id: node.id, item_seq: item.seq, message: item.error });
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
    let needsPerson = node.kind === 'approval' || (node.kind === 'tool' && approvalRequired(spec, node.tool, args));
    if (needsPerson && run.dry_run) {
      const message = node.kind === 'approval' ? String(render(node.message, item.data)) : `would ask before ${tool}`;
      const asked = node.kind === 'approval' ? null : (tool ?? null);
      planned.push(wouldAsk(run.id, item.seq, node.id, 'approval', asked, args, message));
      needsPerson = false;
    }
    if (needsPerson && item.status !== 'needs_review') {
      item.status = 'needs_review';
      changed.add(item);
      approvals.push({
        ...waitingOn(item, node),
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

  /** An item waiting on a state operation takes its result and walks on. */
  const resume = (item: ItemRow, result: unknown): StateOp | undefined => {
    const node = byId.get(item.node_id!) as ToolNode;
    item.data = saveResult(item.data, node.save_as, result);
    count(node, 'done');
    item.node_id = nextNodeId(node, item.data);
    changed.add(item);
    return walk(item);
  };

  return {
    walk,
    resume,
    counters: counters as NodeCounters,
    logs,
    actions,
    approvals,
    reviews,
    planned,
    flagged,
    changed,
  };
}
