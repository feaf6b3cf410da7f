// The per-agent durable state store: values kept between runs, with a version per key for optimistic
// concurrency. Operations are applied in batches so a page of 1,000 increments is one round trip per key.
import type { Knex } from 'knex';
import { cursorPage, decodeTextCursor } from './runs';

export type StateOp =
  | { op: 'get'; key: string; default?: unknown }
  | { op: 'set'; key: string; value: unknown }
  | { op: 'increment'; key: string; by: number }
  | { op: 'append'; key: string; value: unknown };

export class StateConflictError extends Error {}

/**
 * Applies operations in order inside the caller's transaction and returns each one's result (the value after
 * it). Keys are locked for the transaction, so concurrent pages of the same agent serialise per key.
 */
export async function applyStateOps(trx: Knex.Transaction, agentId: string, ops: StateOp[]): Promise<unknown[]> {
  const keys = [...new Set(ops.map((o) => o.key))];
  // Keys this batch writes must exist before they are locked: `for update` locks no row that is not there yet, and
  // two pages incrementing a new key at once would each start from nothing, one overwriting the other (a real
  // Postgres runs them concurrently; PGlite happened to serialise them). An uncommitted placeholder is seen by no
  // one, and the next writer waits on it. Version 0, so the first real write still makes version 1.
  const written = [...new Set(ops.filter((o) => o.op !== 'get').map((o) => o.key))];
  if (written.length > 0) {
    await trx('agent_state')
      .insert(written.map((key) => ({ agent_id: agentId, key, value: 'null', version: 0 })))
      .onConflict(['agent_id', 'key'])
      .ignore();
  }
  const rows: { key: string; value: unknown; version: number }[] = await trx('agent_state')
    .where({ agent_id: agentId })
    .whereIn('key', keys)
    .select('key', 'value', 'version')
    .forUpdate();
  // A placeholder (version 0) is a key with no value yet.
  const current = new Map<string, unknown>(rows.filter((r) => r.version > 0).map((r) => [r.key, r.value]));
  const changed = new Set<string>();
  const results = ops.map((o) => {
    const before = current.get(o.key);
    if (o.op === 'get') return before ?? o.default ?? null;
    let after: unknown;
    if (o.op === 'set') after = o.value;
    else if (o.op === 'increment') after = (typeof before === 'number' ? before : Number(before ?? 0) || 0) + o.by;
    else after = [...(Array.isArray(before) ? before : before === undefined ? [] : [before]), o.value];
    current.set(o.key, after);
    changed.add(o.key);
    return after;
  });
  if (changed.size > 0) {
    await trx('agent_state')
      .insert([...changed].map((key) => ({ agent_id: agentId, key, value: JSON.stringify(current.get(key)) })))
      .onConflict(['agent_id', 'key'])
      .merge({
        value: trx.raw('excluded.value'),
        version: trx.raw('agent_state.version + 1'),
        updated_at: trx.fn.now(),
      });
  }
  return results;
}

export interface StateEntry {
  key: string;
  value: unknown;
  version: number;
  updated_at: Date;
}

/** A page of the agent's entries by key; the cursor is the last key. */
export async function listState(knex: Knex, agentId: string, page: { limit: number; cursor?: string }) {
  const q = knex('agent_state').where({ agent_id: agentId });
  if (page.cursor) q.where('key', '>', decodeTextCursor(page.cursor, false)[0]);
  const rows: StateEntry[] = await q
    .orderBy('key')
    .limit(page.limit + 1)
    .select('key', 'value', 'version', 'updated_at');
  return cursorPage(rows, page.limit, (e) => [e.key]);
}

export async function getState(knex: Knex, agentId: string, key: string): Promise<StateEntry | undefined> {
  return knex('agent_state').where({ agent_id: agentId, key }).first('key', 'value', 'version', 'updated_at');
}

/** Writes a value; with `expectedVersion` it only succeeds if nobody changed the key since it was read. */
export async function putState(
  knex: Knex,
  agentId: string,
  key: string,
  value: unknown,
  expectedVersion?: number,
): Promise<StateEntry> {
  const json = JSON.stringify(value);
  if (expectedVersion === undefined) {
    const [row] = await knex('agent_state')
      .insert({ agent_id: agentId, key, value: json })
      .onConflict(['agent_id', 'key'])
      .merge({ value: json, version: knex.raw('agent_state.version + 1'), updated_at: knex.fn.now() })
      .returning(['key', 'value', 'version', 'updated_at']);
    return row;
  }
  const [row] =
    expectedVersion === 0
      ? await knex('agent_state')
          .insert({ agent_id: agentId, key, value: json })
          .onConflict(['agent_id', 'key'])
          .ignore()
          .returning(['key', 'value', 'version', 'updated_at'])
      : await knex('agent_state')
          .where({ agent_id: agentId, key, version: expectedVersion })
          .update({ value: json, version: expectedVersion + 1, updated_at: knex.fn.now() })
          .returning(['key', 'value', 'version', 'updated_at']);
  if (!row) throw new StateConflictError(`state key "${key}" was changed by someone else; read it again and retry`);
  return row;
}

export async function deleteState(knex: Knex, agentId: string, key: string): Promise<boolean> {
  return (await knex('agent_state').where({ agent_id: agentId, key }).delete()) > 0;
}
