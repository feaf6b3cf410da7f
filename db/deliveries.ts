// Deliveries of micro-batching triggers (webhooks, forms): each is stored in its trigger's open batch before it
// is acknowledged, and a batch becomes one run of many items when its window closes or it is full
// (workflows/delivery-batch.ts). A delivery claims its place with one update of the batch row, which it holds
// until it commits; closing a batch updates the same row, so it waits for every delivery that claimed a place and
// reads them all, and a delivery that comes after finds the batch closed and opens the next one. None is left
// behind, none is in two runs.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { DeliveryBatchConfig } from '../model/trigger';

export interface AcceptedDelivery {
  id: string;
  batchId: string;
  /** Set when this delivery opened the batch: the caller starts its window (before the transaction commits). */
  opened: boolean;
  /** Set when this delivery filled the batch: the caller closes it early. */
  full: boolean;
}

export class DuplicateDelivery extends Error {
  constructor(
    readonly deliveryId: string,
    readonly runId: string | null,
  ) {
    super(`delivery already received`);
  }
}

/** The delivery stored earlier under the same key (webhook-id), and the run its batch became, if any. */
export async function findDelivery(knex: Knex, triggerId: string, key: string) {
  return knex('trigger_deliveries as d')
    .join('delivery_batches as b', 'b.id', 'd.batch_id')
    .where({ 'd.trigger_id': triggerId, 'd.delivery_key': key })
    .first('d.id', 'b.run_id');
}

/**
 * Stores a delivery in the trigger's open batch, opening one when there is none with room and time left.
 * `onOpened` runs inside the transaction when this delivery opened a batch, so a batch is never committed
 * without its window started. Throws DuplicateDelivery when the key was taken first.
 */
export async function acceptDelivery(
  knex: Knex,
  trigger: { id: string; workspace_id: string },
  batch: DeliveryBatchConfig,
  delivery: { key: string | null; data: unknown },
  onOpened: (batchId: string) => Promise<void>,
): Promise<AcceptedDelivery> {
  const id = randomUUID();
  const data = JSON.stringify(delivery.data);
  // Most deliveries find a batch open: one statement claims the place and stores the delivery.
  const joined = await joinOpenBatch(knex, trigger.id, batch.max_items, { id, key: delivery.key, data });
  if (joined) return { id, batchId: joined.id, opened: false, full: joined.size >= batch.max_items };
  return knex.transaction(async (trx) => {
    const claimed = await trx.raw(`${claimOpenBatch} returning id, size`, [
      trigger.id,
      batch.max_items,
      batch.max_items,
    ]);
    let place: { id: string; size: number } | undefined = claimed.rows[0];
    const opened = !place;
    if (!place) {
      place = { id: randomUUID(), size: 1 };
      await trx('delivery_batches').insert({
        id: place.id,
        trigger_id: trigger.id,
        workspace_id: trigger.workspace_id,
        size: 1,
        closes_at: trx.raw(`now() + make_interval(secs => ?)`, [batch.max_wait_ms / 1000]),
      });
    }
    const [stored] = await trx('trigger_deliveries')
      .insert({ id, trigger_id: trigger.id, batch_id: place.id, seq: place.size - 1, delivery_key: delivery.key, data })
      .onConflict(['trigger_id', 'delivery_key'])
      .ignore()
      .returning('id');
    if (!stored) {
      // The same key was stored first (this transaction's claim rolls back with the throw).
      const earlier = await findDelivery(trx, trigger.id, delivery.key!);
      throw new DuplicateDelivery(earlier.id, earlier.run_id);
    }
    if (opened) await onOpened(place.id);
    return { id, batchId: place.id, opened, full: place.size >= batch.max_items };
  });
}

// Takes a place in the trigger's newest batch that is still collecting, has room and time left. The conditions
// stand in the outer WHERE too: a batch closed or filled while this update waited for its row is re-checked
// there (Postgres re-evaluates the WHERE on the row's new version, not the subquery).
const claimOpenBatch = `update delivery_batches set size = size + 1
  where id = (select id from delivery_batches
              where trigger_id = ? and status = 'collecting' and size < ? and closes_at > now()
              order by created_at desc limit 1)
    and status = 'collecting' and size < ? and closes_at > now()`;

/**
 * The common case in one statement: claims a place in the open batch and stores the delivery there. Nothing is
 * claimed when there is no open batch, or when the key was stored before (the caller's transaction then opens a
 * batch, or finds the duplicate), so a batch's size counts its deliveries (but for the place of a twin delivery
 * that raced this one between the check and the insert: a gap in `seq`, harmless).
 */
async function joinOpenBatch(
  knex: Knex,
  triggerId: string,
  maxItems: number,
  delivery: { id: string; key: string | null; data: string },
): Promise<{ id: string; size: number } | undefined> {
  const { rows } = await knex.raw(
    `with place as (
       ${claimOpenBatch}
         and not exists (select 1 from trigger_deliveries where trigger_id = ? and delivery_key = ?)
       returning id, size
     )
     insert into trigger_deliveries (id, trigger_id, batch_id, seq, delivery_key, data)
     select ?, ?, place.id, place.size - 1, ?, ? from place
     on conflict (trigger_id, delivery_key) do nothing
     returning batch_id as id, seq + 1 as size`,
    [triggerId, maxItems, maxItems, triggerId, delivery.key, delivery.id, triggerId, delivery.key, delivery.data],
  );
  return rows[0];
}

/** A delivery as its item in the batch's run: a JSON object with `delivery_id` added; any other body as `body`. */
export function itemOfDelivery(data: unknown, id: string): Record<string, unknown> {
  return data !== null && typeof data === 'object' && !Array.isArray(data)
    ? { ...(data as Record<string, unknown>), delivery_id: id }
    : { body: data, delivery_id: id };
}

export interface ClosedBatch {
  triggerId: string;
  /** Each delivery's data with its id, in the order received: the items of the batch's run. */
  items: Record<string, unknown>[];
  runId: string | null;
}

/**
 * Closes a batch to new deliveries (idempotent) and reads its deliveries, each as its item (itemOfDelivery).
 */
export async function closeBatch(knex: Knex, batchId: string): Promise<ClosedBatch | undefined> {
  return knex.transaction(async (trx) => {
    const [batch] = await trx('delivery_batches')
      .where({ id: batchId })
      .update({ status: 'closed' })
      .returning(['trigger_id', 'run_id']);
    if (!batch) return undefined; // its transaction never committed: nothing was acknowledged
    const rows: { id: string; data: unknown }[] = await trx('trigger_deliveries')
      .where({ batch_id: batchId })
      .orderBy('seq')
      .select('id', 'data');
    const items = rows.map(({ id, data }) => itemOfDelivery(data, id));
    return { triggerId: batch.trigger_id, items, runId: batch.run_id };
  });
}

export async function setBatchRun(knex: Knex, batchId: string, runId: string): Promise<void> {
  await knex('delivery_batches').where({ id: batchId }).update({ run_id: runId });
}
