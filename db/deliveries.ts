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
  return knex.transaction(async (trx) => {
    const claimed = await trx.raw(
      `update delivery_batches set size = size + 1
       where id = (select id from delivery_batches
                   where trigger_id = ? and status = 'collecting' and size < ? and closes_at > now()
                   order by created_at desc limit 1)
       returning id, size`,
      [trigger.id, batch.max_items],
    );
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
      .insert({
        id: randomUUID(),
        trigger_id: trigger.id,
        batch_id: place.id,
        seq: place.size - 1,
        delivery_key: delivery.key,
        data: JSON.stringify(delivery.data),
      })
      .onConflict(['trigger_id', 'delivery_key'])
      .ignore()
      .returning('id');
    if (!stored) {
      // The same key was stored first (this transaction's claim rolls back with the throw).
      const earlier = await findDelivery(trx, trigger.id, delivery.key!);
      throw new DuplicateDelivery(earlier.id, earlier.run_id);
    }
    if (opened) await onOpened(place.id);
    return { id: stored.id, batchId: place.id, opened, full: place.size >= batch.max_items };
  });
}

export interface ClosedBatch {
  triggerId: string;
  /** Each delivery's data with its id, in the order received: the items of the batch's run. */
  items: Record<string, unknown>[];
  runId: string | null;
}

/**
 * Closes a batch to new deliveries (idempotent) and reads its deliveries. A delivery body that is a JSON object
 * becomes the item with `delivery_id` added; any other body becomes `{ body, delivery_id }`.
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
    const items = rows.map(({ id, data }) =>
      data !== null && typeof data === 'object' && !Array.isArray(data)
        ? { ...(data as Record<string, unknown>), delivery_id: id }
        : { body: data, delivery_id: id },
    );
    return { triggerId: batch.trigger_id, items, runId: batch.run_id };
  });
}

export async function setBatchRun(knex: Knex, batchId: string, runId: string): Promise<void> {
  await knex('delivery_batches').where({ id: batchId }).update({ run_id: runId });
}
