// The items of a run made of other runs' items (a retry, a test run on past items): each source run's input read
// again by the input node of the version that run pinned, so an item is exactly what its original run received.
import type { Knex } from 'knex';
import type { ItemData } from '../model/interpreter';
import { loadSpec } from './deps';
import { InputError, itemsOfRun } from '../model/input-parsing';

interface SourceRun {
  id: string;
  agent_id: string;
  agent_version: number;
  input: string;
  trigger: string;
  retry_of: string | null;
  dry_run: boolean;
}

export async function sourcedItems(knex: Knex, runId: string): Promise<ItemData[]> {
  const sources: { seq: number; source_run_id: string; source_seq: number }[] = await knex('run_item_sources')
    .where({ run_id: runId })
    .orderBy('seq')
    .select('seq', 'source_run_id', 'source_seq');
  const runs: SourceRun[] = await knex('runs')
    .whereIn('id', [...new Set(sources.map((s) => s.source_run_id))])
    .select('id', 'agent_id', 'agent_version', 'input', 'trigger', 'retry_of', 'dry_run');
  const parsed = new Map<string, ItemData[]>();
  for (const run of runs) {
    // A retry of a retry: its items are its own sources' items.
    if (run.retry_of || run.dry_run) {
      parsed.set(run.id, await sourcedItems(knex, run.id));
      continue;
    }
    const inputNode = (await loadSpec(knex, run.agent_id, run.agent_version)).nodes[0];
    if (inputNode.kind !== 'input') throw new InputError(`the input of run ${run.id} can no longer be read`);
    parsed.set(run.id, itemsOfRun(inputNode, run));
  }
  return sources.map((s) => {
    const item = parsed.get(s.source_run_id)?.[s.source_seq];
    if (!item) throw new InputError(`run ${s.source_run_id} has no item ${s.source_seq}`);
    return item;
  });
}
