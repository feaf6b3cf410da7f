// What run details say about retries and tests on past items: the runs that retry this one, the items this run
// takes from other runs, and how many of its failed items a retry would take (the console's "Retry N failed items").
import type { Knex } from 'knex';
import { failedItems, itemSourcesOf, retriesOf } from '../db/item-sources';
import type { RunRecord } from '../db/runs';

export async function retryDetails(knex: Knex, run: RunRecord) {
  const sourced = Boolean(run.retry_of || run.dry_run);
  const [retriedBy, sources, failed] = await Promise.all([
    retriesOf(knex, run.id),
    sourced ? itemSourcesOf(knex, run.id) : [],
    run.failed > 0 && !run.dry_run ? failedItems(knex, run.id) : [],
  ]);
  const open = failed.filter((f) => !f.retried_by);
  return {
    retried_by: retriedBy,
    item_sources: sources,
    retry: {
      /** Failed items no retry has taken yet. */
      failed_items: open.length,
      /** Of those, the ones a retry takes now: the others' calls may have acted (held back). */
      retryable_items: open.filter((f) => f.in_doubt.length === 0).map((f) => f.seq),
      held_back_items: open.filter((f) => f.in_doubt.length > 0).map((f) => f.seq),
    },
  };
}
