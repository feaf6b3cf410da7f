// The assistant's tools in Chat Mode. They only read, start, pause, resume and retry runs, test a version on past
// items and decide approvals, each through the same path and checks as the API route that does it (services/runs/:
// start.ts's startRun, pause.ts's pauseRun and resumeRun, retry.ts, test-run.ts; approvals.ts's decideApproval) and each
// against the caller's own role or key scopes. No tool changes an agent, a trigger, a connection, a source or a
// skill: configuration is changed in Operator Mode, and the assistant says where.
import { z } from 'zod';
import { getAgent, getVersion, listAgents } from '../../db/agents';
import { listTriggers } from '../../db/triggers';
import { getRun, listApprovals, listItems, listRuns, runDetails, type RunRecord } from '../../db/runs';
import type { Permission } from '../../db/roles';
import { callerMay, type Caller } from '../caller';
import { decideApproval } from '../approvals';
import { ApiError } from '../errors';
import { currentAgent, startRun, type RunServiceDeps } from '../runs/start';
import { pauseRun, resumeRun } from '../runs/pause';
import { retryRun } from '../runs/retry';
import { startTestRun } from '../runs/test-run';
import { runJson, type Links } from '../runs/json';

export interface ChatToolDeps extends RunServiceDeps {
  links: Links;
}

export interface ToolContext {
  deps: ChatToolDeps;
  caller: Caller;
  conversationId: string;
}

/** What a tool gives back: the JSON the model reads, and the runs the answer then relies on (linked from it). */
export interface ToolOutcome {
  result: unknown;
  runIds: string[];
}

interface ChatTool<S extends z.ZodType> {
  name: string;
  description: string;
  input: S;
  /** What the caller must be allowed, checked before the tool acts (start_run checks again for a test run). */
  needs: Permission;
  /** `read` tools change nothing; `run` tools start, pause or resume runs or decide approvals. None changes configuration. */
  effect: 'read' | 'run';
  call(input: z.infer<S>, ctx: ToolContext): Promise<ToolOutcome>;
}

const tool = <S extends z.ZodType>(t: ChatTool<S>) => t as unknown as ChatTool<z.ZodType>;

const consoleUrl = (ctx: ToolContext, path: string) => `${ctx.deps.links.publicUrl}${path}`;

async function loadRun(ctx: ToolContext, runId: string): Promise<RunRecord> {
  const run = await getRun(ctx.deps.knex, ctx.caller.workspace.id, runId);
  if (!run) throw new ApiError(404, 'run_not_found', `no run ${runId} in this workspace`);
  return run;
}

async function loadAgent(ctx: ToolContext, agentId: string) {
  const agent = await getAgent(ctx.deps.knex, ctx.caller.workspace.id, agentId);
  if (!agent) throw new ApiError(404, 'agent_not_found', `no agent ${agentId} in this workspace`);
  return agent;
}

const runId = z.string().describe('The run id (a UUID).');
const agentId = z.string().describe('The agent id (a UUID), as list_agents gives it.');

export const chatTools: ChatTool<z.ZodType>[] = [
  tool({
    name: 'list_agents',
    description: 'List the agents of the workspace: id, name, description, lifecycle state and console link.',
    input: z.object({}),
    needs: 'read',
    effect: 'read',
    async call(_input, ctx) {
      const page = await listAgents(ctx.deps.knex, ctx.caller.workspace.id, { limit: 100 });
      return {
        result: page.data.map((a) => ({
          id: a.id,
          name: a.name,
          description: a.description,
          state: a.state,
          version: a.current_version,
          console_url: consoleUrl(ctx, `/agents/${a.id}`),
        })),
        runIds: [],
      };
    },
  }),
  tool({
    name: 'describe_agent',
    description:
      'Describe one agent: its instructions, node graph, approval policy, connections, triggers, recent runs, and the Operator Mode link where its configuration is changed.',
    input: z.object({ agent_id: agentId }),
    needs: 'read',
    effect: 'read',
    async call({ agent_id }, ctx) {
      const agent = await loadAgent(ctx, agent_id);
      const [spec, triggers, recent] = await Promise.all([
        getVersion(ctx.deps.knex, agent.id, agent.current_version),
        listTriggers(ctx.deps.knex, agent.id),
        listRuns(ctx.deps.knex, ctx.caller.workspace.id, { agentId: agent.id }, { limit: 5 }),
      ]);
      return {
        result: {
          id: agent.id,
          name: agent.name,
          description: agent.description,
          state: agent.state,
          version: agent.current_version,
          instructions: spec?.instructions,
          nodes: spec?.nodes,
          policy: spec?.policy,
          connections: spec?.connections,
          triggers: triggers.map((t) => ({ id: t.id, kind: t.kind, name: t.name })),
          recent_runs: recent.data.map((r) => ({
            id: r.id,
            status: r.status,
            created_at: r.created_at,
            console_url: consoleUrl(ctx, `/runs/${r.id}`),
          })),
          console_url: consoleUrl(ctx, `/agents/${agent.id}`),
          operator_mode_url: consoleUrl(ctx, `/agents/${agent.id}/edit`),
        },
        runIds: [],
      };
    },
  }),
  tool({
    name: 'start_run',
    description:
      'Start a run of an agent with the input the person gave (text, CSV or JSON, as its input node reads). A live agent gets a real run; set test=true for a test run (any state, e.g. a draft; needs the editor role). Only call this when the person asked for a run.',
    input: z.object({
      agent_id: agentId,
      input: z.string().max(1_000_000).describe('The data the run receives, exactly as the person gave it.'),
      test: z.boolean().optional().describe('A test run instead of a real one (drafts can only have test runs).'),
    }),
    needs: 'run',
    effect: 'run',
    async call({ agent_id, input, test }, ctx) {
      const { deps, caller } = ctx;
      const ws = caller.workspace;
      if (test && !callerMay(caller, 'manage'))
        throw new ApiError(403, 'role_forbidden', 'a test run needs the editor role (or a manage key)');
      const trigger = test ? 'test' : caller.key ? 'api' : 'manual';
      // The same checks as the API: the agent must be live for a real run; the plan allowance and input apply.
      const agent = await currentAgent(deps.knex, ws, agent_id, trigger);
      const { run } = await startRun(deps, { workspace: ws, agent, input, trigger });
      return { result: runJson(run, deps.links), runIds: [run.id] };
    },
  }),
  tool({
    name: 'get_run',
    description:
      "A run's status, item counts, a page of its items (input, output, error), its outputs, files (download links), approvals and failure details.",
    input: z.object({
      run_id: runId,
      item_status: z
        .enum(['pending', 'running', 'done', 'failed', 'needs_review', 'skipped'])
        .optional()
        .describe('Only items with this status (e.g. failed, to explain failures).'),
      items_limit: z.number().int().min(0).max(100).optional().describe('How many items to include (default 20).'),
    }),
    needs: 'read',
    effect: 'read',
    async call({ run_id, item_status, items_limit }, ctx) {
      const run = await loadRun(ctx, run_id);
      const [details, items] = await Promise.all([
        runDetails(ctx.deps.knex, run.id),
        listItems(ctx.deps.knex, run.id, { limit: items_limit ?? 20, status: item_status }),
      ]);
      return {
        result: {
          ...runJson(run, ctx.deps.links),
          items: items.data.map(({ reasoning: _r, ...item }) => item),
          more_items: items.next_cursor !== null,
          outputs: details.outputs,
          files: details.files.map((f) => ({
            ...f,
            url: `${ctx.deps.links.publicUrl}/v1/runs/${run.id}/files/${f.id}`,
          })),
          approvals: details.approvals.map(({ workflow_id: _wf, ...a }) => a),
          failure: run.error ?? null,
        },
        runIds: [run.id],
      };
    },
  }),
  tool({
    name: 'explain_run',
    description:
      "Explain how a run went: its node activity (items in, done, failed per node), the model's reasoning step by step for its items, and the source passages it retrieved and cited.",
    input: z.object({
      run_id: runId,
      item_seq: z.number().int().min(0).optional().describe('One item (its seq, from 0); otherwise the first few.'),
    }),
    needs: 'read',
    effect: 'read',
    async call({ run_id, item_seq }, ctx) {
      const run = await loadRun(ctx, run_id);
      const knex = ctx.deps.knex;
      const items = knex('run_items').where({ run_id: run.id }).orderBy('seq').limit(5);
      if (item_seq !== undefined) items.where({ seq: item_seq });
      const context = knex('run_source_context').where({ run_id: run.id }).orderBy(['item_seq', 'at']).limit(10);
      const cited = knex('run_citations').where({ run_id: run.id, kept: true }).orderBy(['item_seq', 'at']).limit(20);
      if (item_seq !== undefined) {
        context.where({ item_seq });
        cited.where({ item_seq });
      }
      const [details, itemRows, contextRows, citedRows] = await Promise.all([
        runDetails(knex, run.id),
        items.select('seq', 'status', 'data', 'output', 'error', 'node_id', 'reasoning'),
        context.select('item_seq', 'node_id', 'query', 'passages'),
        cited.select('item_seq', 'node_id', 'passage_id', 'source', 'page', 'paragraph'),
      ]);
      return {
        result: {
          run: runJson(run, ctx.deps.links),
          node_activity: details.nodeActivity,
          items: itemRows,
          source_context: contextRows,
          citations: citedRows.map((c: Record<string, unknown>) => ({
            ...c,
            citation_url: `${ctx.deps.links.publicUrl}/citations/${c.passage_id}`,
          })),
        },
        runIds: [run.id],
      };
    },
  }),
  tool({
    name: 'pause_run',
    description:
      'Pause a running run: steps under way finish, nothing new starts until it is resumed; approvals can still be decided meanwhile. Only when the person asked to pause that run.',
    input: z.object({ run_id: runId }),
    needs: 'run',
    effect: 'run',
    async call({ run_id }, ctx) {
      const run = await pauseRun(ctx.deps, ctx.caller.workspace.id, run_id, `${ctx.caller.actor} (in Chat Mode)`);
      return { result: runJson(run, ctx.deps.links), runIds: [run.id] };
    },
  }),
  tool({
    name: 'resume_run',
    description:
      'Resume a paused run where it stopped (each item still done once). Only when the person asked to resume that run.',
    input: z.object({ run_id: runId }),
    needs: 'run',
    effect: 'run',
    async call({ run_id }, ctx) {
      const run = await resumeRun(ctx.deps, ctx.caller.workspace.id, run_id, `${ctx.caller.actor} (in Chat Mode)`);
      return { result: runJson(run, ctx.deps.links), runIds: [run.id] };
    },
  }),
  tool({
    name: 'retry_failed_items',
    description:
      "Retry an ended run's failed items in a new run (items whose call may already have acted elsewhere are held back and named). Only when the person asked to retry that run.",
    input: z.object({
      run_id: runId,
      version: z.enum(['same', 'current']).optional().describe("`current`: on the agent's current version"),
    }),
    needs: 'run',
    effect: 'run',
    async call({ run_id, version }, ctx) {
      const { run, retried, held_back } = await retryRun(ctx.deps, ctx.caller.workspace, run_id, {
        items: 'failed',
        version,
      });
      return { result: { run: runJson(run, ctx.deps.links), retried, held_back }, runIds: [run.id] };
    },
  }),
  tool({
    name: 'test_version_on_past_items',
    description:
      'Test an agent version on past items in test mode (nothing acts in other systems, approvals are only noted) and compare each item with its original run. Only when the person asked to test a version.',
    input: z.object({
      agent_id: z.string(),
      version: z.number().int().min(1),
      from_run: runId.optional().describe('the run whose items to use; the last 20 items of the agent otherwise'),
    }),
    needs: 'manage',
    effect: 'run',
    async call({ agent_id, version, from_run }, ctx) {
      const run = await startTestRun(ctx.deps, ctx.caller.workspace, agent_id, { version, from_run });
      return { result: runJson(run, ctx.deps.links), runIds: [run.id] };
    },
  }),
  tool({
    name: 'list_pending_approvals',
    description: 'Approvals waiting on a person, in the workspace or one run: the tool call each holds and why.',
    input: z.object({ run_id: runId.optional() }),
    needs: 'read',
    effect: 'read',
    async call({ run_id }, ctx) {
      const page = await listApprovals(
        ctx.deps.knex,
        ctx.caller.workspace.id,
        { status: 'pending', runId: run_id },
        { limit: 50 },
      );
      const data = page.data.map(({ workflow_id: _wf, cursor_at: _c, ...a }: Record<string, unknown>) => a);
      return { result: data, runIds: [...new Set(data.map((a) => String(a.run_id)))] };
    },
  }),
  tool({
    name: 'decide_approval',
    description:
      'Approve or reject a pending approval. Only when the person explicitly asked to approve or reject that approval in this conversation; never on your own initiative.',
    input: z.object({
      approval_id: z.string().describe('The approval id, as list_pending_approvals gives it.'),
      decision: z.enum(['approve', 'reject']),
      comment: z.string().max(2000).optional().describe("The person's reason, if they gave one."),
    }),
    needs: 'run',
    effect: 'run',
    async call({ approval_id, decision, comment }, ctx) {
      const approval = await decideApproval(
        ctx.deps,
        ctx.caller.workspace.id,
        approval_id,
        { decision, comment },
        `${ctx.caller.actor} (in Chat Mode)`,
      );
      const { workflow_id: _wf, ...rest } = approval;
      return { result: rest, runIds: [approval.run_id] };
    },
  }),
];

/** Runs a tool the model asked for: unknown tools, bad input, a role that does not allow it, refusals — as text. */
export async function callChatTool(
  name: string,
  rawInput: unknown,
  ctx: ToolContext,
): Promise<{ content: string; isError: boolean; runIds: string[] }> {
  const t = chatTools.find((c) => c.name === name);
  if (!t) return { content: `there is no tool ${name}`, isError: true, runIds: [] };
  if (!callerMay(ctx.caller, t.needs)) {
    const who = ctx.caller.key
      ? `this API key's scopes (${ctx.caller.key.scopes.join(', ')})`
      : `the ${ctx.caller.role} role`;
    return {
      content: `${who} does not allow ${name}: it needs the ${t.needs === 'run' ? 'operator' : t.needs} role or higher; ask an admin`,
      isError: true,
      runIds: [],
    };
  }
  const parsed = t.input.safeParse(rawInput ?? {});
  if (!parsed.success)
    return {
      content: `invalid input: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`,
      isError: true,
      runIds: [],
    };
  try {
    const { result, runIds } = await t.call(parsed.data, ctx);
    return { content: JSON.stringify(result, null, 1).slice(0, maxResultChars), isError: false, runIds };
  } catch (err) {
    if (err instanceof ApiError) return { content: `${err.code}: ${err.message}`, isError: true, runIds: [] };
    throw err;
  }
}

/** A tool result longer than this is cut: a run's page of items fits; a whole 10,000-item run does not. */
const maxResultChars = 30_000;

/** The tool definitions as the Messages API takes them. */
export function chatToolDefinitions() {
  return chatTools.map((t) => {
    const { $schema: _s, ...schema } = z.toJSONSchema(t.input, { io: 'input' }) as Record<string, unknown>;
    return { name: t.name, description: t.description, input_schema: { type: 'object' as const, ...schema } };
  });
}
