// Testing a version on past items: a test run (any agent state) of that version over items earlier runs took, in
// test mode: model steps and read-only tools run for real, tools that act in other systems only plan their effect,
// and approvals and reviews are recorded as "would ask" (activities/effects-ledger.ts, activities/page-walk.ts).
// The result compares each item with its original run (model/test-comparison.ts).
import { getVersion, type AgentRow } from '../../db/agents';
import { comparedItems, lastItemsOfAgent, type ItemRef } from '../../db/item-sources';
import { getRun, type RunRecord } from '../../db/runs';
import type { Workspace } from '../../db/workspaces';
import { compareOutcomes, summarize } from '../../model/test-comparison';
import { ApiError } from '../errors';
import { currentAgent, startRun, type RunServiceDeps } from './start';

export const maxTestItems = 5_000;

export interface TestRunRequest {
  version: number;
  from_run?: string;
  items?: number[];
  last?: number;
}

export async function startTestRun(
  deps: RunServiceDeps,
  workspace: Workspace,
  agentId: string,
  body: TestRunRequest,
): Promise<RunRecord> {
  const { knex } = deps;
  const agent = await currentAgent(knex, workspace, agentId, 'test');
  if (!(await getVersion(knex, agent.id, body.version)))
    throw new ApiError(
      422,
      'version_not_found',
      `the agent has no version ${body.version} (its versions are 1 to ${agent.current_version})`,
    );
  const items = await pastItems(deps, workspace, agent.id, body);
  const { run } = await startRun(deps, {
    workspace,
    agent,
    trigger: 'test',
    version: body.version,
    input: `test of version ${body.version} on ${items.length} past item${items.length === 1 ? '' : 's'}`,
    itemsFrom: { items, dryRun: true },
  });
  return run;
}

async function pastItems(
  { knex }: RunServiceDeps,
  workspace: Workspace,
  agentId: string,
  body: TestRunRequest,
): Promise<ItemRef[]> {
  if (body.from_run !== undefined && body.last !== undefined)
    throw new ApiError(422, 'from_run_or_last', 'give either from_run (with items) or last, not both');
  if (body.from_run === undefined) {
    if (body.items !== undefined)
      throw new ApiError(422, 'from_run_required', '"items" are item numbers of a run: give that run as "from_run"');
    const items = await lastItemsOfAgent(knex, agentId, body.last ?? 20);
    if (items.length === 0)
      throw new ApiError(409, 'no_past_items', 'the agent has no past items yet: run it first, or start a test run');
    return items;
  }
  const source = await getRun(knex, workspace.id, body.from_run);
  if (!source || source.agent_id !== agentId)
    throw new ApiError(422, 'from_run_not_found', `the agent has no run ${body.from_run}`);
  if (body.items === undefined) {
    if (source.total === 0) throw new ApiError(409, 'no_past_items', `run ${source.id} has no items`);
    return Array.from({ length: Math.min(source.total, maxTestItems) }, (_, seq) => ({ runId: source.id, seq }));
  }
  const outside = body.items.filter((seq) => seq >= source.total);
  if (outside.length > 0)
    throw new ApiError(
      422,
      'no_such_items',
      `run ${source.id} has no item ${outside.join(', ')}: its ${source.total} items are numbered 0 to ${source.total - 1}`,
      {},
      { items: outside },
    );
  return [...new Set(body.items)].map((seq) => ({ runId: source.id, seq }));
}

/** A test run on past items with each item beside its original, and the summary. */
export async function testRunComparison(deps: RunServiceDeps, run: RunRecord) {
  const items = (await comparedItems(deps.knex, run.id)).map((item) => ({
    ...item,
    difference: compareOutcomes(item.original, item.test),
  }));
  return { summary: summarize(items.map((i) => i.difference)), items };
}

/**
 * The agent's optional gate (`policy.live_after_test_on_past_items`): its current version goes Live only after a test
 * run of that version on past items that has ended with no item failing that did not fail before. 409 otherwise,
 * naming the test run to make (or the one that found new failures).
 */
export async function checkTestedOnPastItems({ knex, ...deps }: RunServiceDeps, agent: AgentRow): Promise<void> {
  const spec = await getVersion(knex, agent.id, agent.current_version);
  if (!spec?.policy.live_after_test_on_past_items) return;
  const version = agent.current_version;
  const make = `POST /v1/agents/${agent.id}/test-runs {"version": ${version}, "last": 20}`;
  const latest = await knex('runs')
    .where({ agent_id: agent.id, agent_version: version, dry_run: true })
    .orderBy('created_at', 'desc')
    .first('id', 'status');
  if (!latest || !['completed', 'failed'].includes(latest.status))
    throw new ApiError(
      409,
      'test_on_past_items_required',
      latest
        ? `version ${version} goes live only after its test run on past items ends: run ${latest.id} is ${latest.status}`
        : `version ${version} goes live only after a test run on past items with no new failures: start one (${make})`,
      {},
      { version, test_run: latest?.id ?? null, make },
    );
  const run = (await getRun(knex, agent.workspace_id, latest.id))!;
  const { summary, items } = await testRunComparison({ knex, ...deps }, run);
  if (summary.now_fail > 0)
    throw new ApiError(
      409,
      'test_on_past_items_failed',
      `version ${version} does not go live: its test run ${run.id} on past items has new failures (${summary.text}); fix the version and test it again (${make})`,
      {},
      {
        version,
        test_run: run.id,
        now_failing: items.filter((i) => i.difference?.now_fails).map((i) => i.source),
      },
    );
}
