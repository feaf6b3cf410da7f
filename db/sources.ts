// Sources, their versions and documents, as the API reads and writes them. Everything is scoped by workspace.
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { cursorPage, decodeTextCursor } from './runs';

export type VersionStatus = 'indexing' | 'ready' | 'failed' | 'archived';

export interface SourceRow {
  id: string;
  workspace_id: string;
  name: string;
  kind: 'files' | 'url';
  current_version_id: string | null;
  latest_version: number;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  id: string;
  source_id: string;
  workspace_id: string;
  version: number;
  status: VersionStatus;
  error: string | null;
  pages_total: number;
  pages_done: number;
  passages: number;
  workflow_id: string | null;
  created_by: string | null;
  created_at: Date;
  indexed_at: Date | null;
  activated_at: Date | null;
  archived_at: Date | null;
}

export interface DocumentRow {
  id: string;
  version_id: string;
  position: number;
  file_name: string;
  url: string | null;
  format: string | null;
  content_type: string | null;
  size: number | null;
  sha256: string | null;
  status: string;
  error: string | null;
  pages_total: number;
  pages_done: number;
}

export interface NewDocument {
  fileName: string;
  format?: string;
  contentType?: string;
  content?: Buffer;
  url?: string;
  /** The Authorization header to fetch the URL with, sealed. */
  authHeaderSealed?: string;
}

const isUuid = (id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);

export const versionWorkflowId = (versionId: string) => `source-version-${versionId}`;

/**
 * Adds a version to the source called `name` (creating the source if there is none): version 1 of a new
 * source, or the next version of an existing one, which replaces the current version once indexed.
 */
export async function addVersion(
  knex: Knex,
  workspaceId: string,
  input: { name: string; kind: 'files' | 'url'; documents: NewDocument[]; createdBy: string },
): Promise<{ source: SourceRow; version: VersionRow; replaced: boolean }> {
  return knex.transaction(async (trx) => {
    // Two uploads of the same new name at once: the unique key makes one of them wait, then both add a version.
    await trx.raw(
      `insert into sources (id, workspace_id, name, kind) values (?, ?, ?, ?)
       on conflict (workspace_id, name) do nothing`,
      [randomUUID(), workspaceId, input.name, input.kind],
    );
    const [source] = await trx('sources')
      .where({ workspace_id: workspaceId, name: input.name })
      .update({ latest_version: trx.raw('latest_version + 1'), updated_at: trx.fn.now(), kind: input.kind })
      .returning('*');
    const id = randomUUID();
    const [version] = await trx('source_versions')
      .insert({
        id,
        source_id: source.id,
        workspace_id: workspaceId,
        version: source.latest_version,
        workflow_id: versionWorkflowId(id),
        created_by: input.createdBy,
      })
      .returning('*');
    await trx('source_documents').insert(
      input.documents.map((d, i) => ({
        id: randomUUID(),
        version_id: id,
        position: i + 1,
        file_name: d.fileName,
        url: d.url ?? null,
        format: d.format ?? null,
        content_type: d.contentType ?? null,
        size: d.content?.length ?? null,
        sha256: d.content ? createHash('sha256').update(d.content).digest('hex') : null,
        content: d.content ?? null,
        auth_header_sealed: d.authHeaderSealed ?? null,
      })),
    );
    return { source, version, replaced: source.latest_version > 1 };
  });
}

export async function getSource(knex: Knex, workspaceId: string, id: string): Promise<SourceRow | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('sources').where({ id, workspace_id: workspaceId }).first();
}

export function listSources(knex: Knex, workspaceId: string): Promise<SourceRow[]> {
  return knex('sources').where({ workspace_id: workspaceId }).orderBy('name');
}

/** A page of the workspace's sources by name; the cursor is the last one's name and id. */
export async function listSourcesPage(knex: Knex, workspaceId: string, page: { limit: number; cursor?: string }) {
  const q = knex('sources').where({ workspace_id: workspaceId });
  if (page.cursor) q.whereRaw('(name, id) > (?, ?::uuid)', decodeTextCursor(page.cursor));
  const rows: SourceRow[] = await q.orderBy([{ column: 'name' }, { column: 'id' }]).limit(page.limit + 1);
  return cursorPage(rows, page.limit, (s) => [s.name, s.id]);
}

export function listVersions(knex: Knex, sourceIds: string[]): Promise<VersionRow[]> {
  if (sourceIds.length === 0) return Promise.resolve([]);
  return knex('source_versions').whereIn('source_id', sourceIds).orderBy('version', 'desc');
}

export function listDocuments(knex: Knex, versionIds: string[]): Promise<DocumentRow[]> {
  if (versionIds.length === 0) return Promise.resolve([]);
  return knex('source_documents')
    .whereIn('version_id', versionIds)
    .orderBy('position')
    .select(
      'id',
      'version_id',
      'position',
      'file_name',
      'url',
      'format',
      'content_type',
      'size',
      'sha256',
      'status',
      'error',
      'pages_total',
      'pages_done',
    );
}

export async function deleteSource(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  return (await knex('sources').where({ id, workspace_id: workspaceId }).delete()) > 0;
}

/** Names of the workspace's agents whose current version lists each source. */
export async function agentsUsing(knex: Knex, workspaceId: string): Promise<Map<string, string[]>> {
  const rows: { name: string; source: string }[] = (
    await knex.raw(
      `select a.name, s.source
         from agents a
         join agent_versions v on v.agent_id = a.id and v.version = a.current_version
         cross join lateral jsonb_array_elements_text(coalesce(v.spec->'sources', '[]'::jsonb)) as s(source)
        where a.workspace_id = ?
        order by a.name`,
      [workspaceId],
    )
  ).rows;
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.source, [...(out.get(r.source) ?? []), r.name]);
  return out;
}

export interface PassageRecord {
  id: number;
  source_id: string;
  source_name: string;
  version_id: string;
  version: number;
  version_status: VersionStatus;
  document_id: string;
  file_name: string;
  format: string | null;
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
  boxes: { x: number; y: number; width: number; height: number }[] | null;
  words: unknown[] | null;
  ocr_confidence: number | null;
  page_width: number | null;
  page_height: number | null;
  page_unit: string | null;
  page_ocr: boolean | null;
  has_image: boolean;
}

export async function getPassage(knex: Knex, workspaceId: string, id: string): Promise<PassageRecord | undefined> {
  if (!/^\d{1,18}$/.test(id)) return undefined;
  return knex('passages as p')
    .join('sources as s', 's.id', 'p.source_id')
    .join('source_versions as v', 'v.id', 'p.version_id')
    .join('source_documents as d', 'd.id', 'p.document_id')
    .leftJoin('source_pages as g', function () {
      this.on('g.document_id', '=', 'p.document_id').andOn('g.page', '=', 'p.page');
    })
    .where({ 'p.id': id, 'p.workspace_id': workspaceId })
    .first(
      'p.id',
      'p.source_id',
      's.name as source_name',
      'p.version_id',
      'v.version',
      'v.status as version_status',
      'p.document_id',
      'd.file_name',
      'd.format',
      'p.page',
      'p.paragraph',
      'p.part',
      'p.text',
      'p.boxes',
      'p.words',
      'p.ocr_confidence',
      'g.width as page_width',
      'g.height as page_height',
      'g.unit as page_unit',
      'g.ocr as page_ocr',
      // A PDF page's picture is made when first asked for (activities/sources/page-pictures.ts).
      knex.raw("(g.image is not null or (d.format = 'pdf' and g.page is not null)) as has_image"),
    );
}

export async function getPageImage(knex: Knex, documentId: string, page: number): Promise<Buffer | undefined> {
  const row = await knex('source_pages').where({ document_id: documentId, page }).first('image');
  return row?.image ?? undefined;
}

export interface VersionPassageRow {
  id: string;
  file_name: string;
  url: string | null;
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
}

/** A version's passages in document order (document, page, paragraph), a page at a time from `offset`. */
export async function listVersionPassages(
  knex: Knex,
  versionId: string,
  { limit, offset }: { limit: number; offset: number },
): Promise<{ data: VersionPassageRow[]; next_cursor: string | null }> {
  // Pages of a document may be indexed in parallel, so ids are not document order; an indexed version never
  // changes, so an offset is a stable cursor.
  const rows: VersionPassageRow[] = await knex('passages as p')
    .join('source_documents as d', 'd.id', 'p.document_id')
    .where('p.version_id', versionId)
    .orderBy([
      { column: 'd.position' },
      { column: 'p.page', nulls: 'first' },
      { column: 'p.paragraph' },
      { column: 'p.part' },
      { column: 'p.id' },
    ])
    .offset(offset)
    .limit(limit + 1)
    .select(knex.raw('p.id::text as id'), 'd.file_name', 'd.url', 'p.page', 'p.paragraph', 'p.part', 'p.text');
  const more = rows.length > limit;
  return { data: rows.slice(0, limit), next_cursor: more ? String(offset + limit) : null };
}
