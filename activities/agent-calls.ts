// call_agent nodes: an item starts a run of another agent of the workspace and, when the node says so, waits
// for it. Opening the run is idempotent per (run, item, node), so a retried activity finds the run it opened;
// the page workflow runs it as a child (workflows/run-page.ts) and then hands its result back here.
import type { AgentRow } from '../db/agents';
import { ApiError } from '../services/errors';
import { openRunForWorkflow, refusalToRun } from '../services/runs/start';
import { appendRunLog } from '../db/run-progress';
import { getWorkspace } from '../db/workspaces';
import type { AgentNode } from '../model/agent';
import { nextNodeId, render, saveResult } from '../model/interpreter';
import { loadRun, loadSpec, nodeById, type ActivityDeps } from './deps';
import { settleItem } from './item-steps';
import { planEffect } from './effects-ledger';
import { runResults, type OpenedRun } from '../services/triggers/fires';

type CallNode = Extract<AgentNode, { kind: 'call_agent' }>;

export function createAgentCallActivities({ knex }: ActivityDeps) {
  const load = async (runId: string, seq: number, nodeId: string, agentId: string, agentVersion: number) => {
    const node = nodeById(await loadSpec(knex, agentId, agentVersion), nodeId) as CallNode;
    const item = await knex('run_items').where({ run_id: runId, seq }).first('status', 'data', 'node_id');
    const current = item && item.node_id === nodeId && !['done', 'failed', 'skipped'].includes(item.status);
    return { node, item: current ? item : undefined };
  };
  const failItem = (runId: string, seq: number, node: CallNode, why: string) =>
    settleItem(knex, {
      runId,
      seq,
      node,
      patch: { status: 'failed', error: `${node.id}: ${why}` },
      outcome: 'failed',
      log: `${node.id}: ${why}`,
    });

  return {
    /** Opens the called agent's run, or fails the item with the reason it cannot be called. */
    async openAgentCall({
      runId,
      seq,
      nodeId,
      agentId,
      agentVersion,
    }: {
      runId: string;
      seq: number;
      nodeId: string;
      agentId: string;
      agentVersion: number;
    }): Promise<OpenedRun | { outcome: 'failed' | 'already_done' }> {
      const { node, item } = await load(runId, seq, nodeId, agentId, agentVersion);
      if (!item) return { outcome: 'already_done' };
      const run = await loadRun(knex, runId);
      if (run.dry_run) {
        // A test run on past items starts no other agent: the call is planned and the item goes on.
        const rendered = render(node.input, item.data);
        const result = await planEffect(knex, {
          key: `${runId}:${seq}:${nodeId}`,
          runId,
          seq,
          nodeId,
          tool: `call_agent:${node.agent_id}`,
          arguments: { agent_id: node.agent_id, input: rendered },
        });
        const data = saveResult(item.data, node.save_as, result);
        const following = nextNodeId(node, data);
        await settleItem(knex, {
          runId,
          seq,
          node,
          patch: { status: following ? 'pending' : 'done', data, node_id: following },
          outcome: 'done',
        });
        return { outcome: 'already_done' };
      }
      const fail = async (why: string) => {
        await failItem(runId, seq, node, why);
        return { outcome: 'failed' as const };
      };
      const target: AgentRow | undefined = await knex('agents')
        .where({ id: node.agent_id, workspace_id: run.workspace_id })
        .first();
      if (!target) return fail(`the called agent ${node.agent_id} no longer exists`);
      // The door decides (services/runs/start.ts); asked first here only to name the agent in the item's failure.
      if (refusalToRun(target, target.id, 'agent'))
        return fail(`the called agent "${target.name}" is ${target.state}; only a live agent can be called`);
      const rendered = render(node.input, item.data);
      const input = typeof rendered === 'string' ? rendered : JSON.stringify(rendered);
      const workspace = (await getWorkspace(knex, run.workspace_id))!;
      let opened;
      try {
        opened = await openRunForWorkflow(knex, {
          workspace,
          agent: target,
          input,
          trigger: 'agent',
          parent: { runId, itemSeq: seq, nodeId },
          idempotencyKey: `call:${runId}:${seq}:${nodeId}`,
        });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        // Edited twice while being opened: the activity's retry reads it again.
        if (err.code === 'agent_changing') throw new Error(`the called agent "${target.name}" changed meanwhile`);
        if (err.code === 'plan_allowance_exhausted')
          return fail(`the ${workspace.plan} plan's runs for this month are used up, so "${target.name}" cannot run`);
        if (err.code === 'idempotency_key_in_flight' || err.code === 'idempotency_key_reused')
          return fail('the call could not be opened; retry the run');
        return fail(`"${target.name}" refused the call: ${err.message}`);
      }
      const id = opened.run.id;
      if (opened.created) {
        await appendRunLog(knex, [
          {
            run_id: runId,
            level: 'info',
            node_id: node.id,
            item_seq: seq,
            message: `started run ${id} of "${target.name}"`,
          },
        ]);
      }
      return { id, workspace_id: workspace.id, agent_id: target.id, trigger: 'agent' };
    },

    /** Puts the called run's result (or its id, when not waited on) into the item and moves it on. */
    async finishAgentCall({
      runId,
      seq,
      nodeId,
      agentId,
      agentVersion,
      calledRunId,
      waited,
    }: {
      runId: string;
      seq: number;
      nodeId: string;
      agentId: string;
      agentVersion: number;
      calledRunId: string;
      waited: boolean;
    }): Promise<'advanced' | 'failed' | 'already_done'> {
      const { node, item } = await load(runId, seq, nodeId, agentId, agentVersion);
      if (!item) return 'already_done';
      const called = await knex('runs').where({ id: calledRunId }).first('status', 'error');
      if (waited && called.status !== 'completed' && called.status !== 'needs_review') {
        await failItem(
          runId,
          seq,
          node,
          `the called run ${calledRunId} ended ${called.status}${called.error ? `: ${called.error}` : ''}`,
        );
        return 'failed';
      }
      const result = waited
        ? { run_id: calledRunId, status: called.status, outputs: await runResults(knex, calledRunId) }
        : { run_id: calledRunId, status: 'started' };
      const data = saveResult(item.data, node.save_as, result);
      const following = nextNodeId(node, data);
      await settleItem(knex, {
        runId,
        seq,
        node,
        patch: { status: following ? 'pending' : 'done', data, node_id: following },
        outcome: 'done',
      });
      return 'advanced';
    },
  };
}
