// Files a step writes into its run (file.generate). The file's id derives from the step's idempotency key,
// so a retried step that gets as far as writing again finds the file already there; a step saving several files
// (a message's attachments) names each one's `part` of it.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/** The id a file saved under this key (and part) gets: the same however often a retry saves it. */
export function runFileId(idempotencyKey: string, part?: string): string {
  const key = part === undefined ? idempotencyKey : `${idempotencyKey}:${part}`;
  const h = createHash('sha256').update(`file:${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function runFileSaver(knex: Knex, runId: string, idempotencyKey: string) {
  return async (file: { name: string; contentType: string; content: Buffer; part?: string }) => {
    const id = runFileId(idempotencyKey, file.part);
    const run = await knex('runs').where({ id: runId }).first('workspace_id');
    await knex('files')
      .insert({
        id,
        workspace_id: run.workspace_id,
        run_id: runId,
        name: file.name,
        content_type: file.contentType,
        size: file.content.length,
        content: file.content,
      })
      .onConflict('id')
      .ignore();
    return { file_id: id, name: file.name, size: file.content.length, content_type: file.contentType };
  };
}

export interface RunFile {
  id: string;
  name: string;
  contentType: string;
  content: Buffer;
}

/**
 * Reads a file of the run by its id, or by its name (the newest of that name), for a tool that sends it elsewhere.
 * Only the run's own files: a step cannot reach another run's or another workspace's.
 */
export function runFileReader(knex: Knex, runId: string) {
  return async (ref: string): Promise<RunFile | undefined> => {
    const isId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref);
    const row = await knex('files')
      .where({ run_id: runId, ...(isId ? { id: ref } : { name: ref }) })
      .orderBy('created_at', 'desc')
      .first('id', 'name', 'content_type', 'content');
    return row && { id: row.id, name: row.name, contentType: row.content_type, content: Buffer.from(row.content) };
  };
}
