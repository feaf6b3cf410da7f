// Sources: upload files (several at once) or a URL, follow indexing, replace by uploading under the same name,
// search, and open citations (the passage, its page picture and the boxes of the text on it).
import { Router, type Request } from 'express';
import { jsonSchema, list, nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import {
  addVersion,
  agentsUsing,
  deleteSource,
  getPassage,
  getSource,
  listDocuments,
  listSources,
  listSourcesPage,
  listVersionPassages,
  listVersions,
  type DocumentRow,
  type NewDocument,
  type SourceRow,
  type VersionRow,
} from '../../db/sources';
import { getRun } from '../../db/runs';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { EmbeddingProviderError, type Adapters } from '../../services/adapters';
import type { SecretBox } from '../../db/secret-box';
import { readUpload } from '../source-upload';
import { describeUnknownSource, unknownSources } from '../source-warnings';
import { startSourceIndexing } from '../source-indexing';
import { jsonBody, param, parseBody, readJson } from '../validation';
import type { RouteDeps } from './agents';
import { parseQuery, queries } from '../query-params';
import { bodies, sourceName } from '../request-bodies';

/** Who made a change: until accounts exist, the API key that made it. */
const byCaller = (req: Request) => req.auth!.actor;

export function sourceRoutes(deps: RouteDeps & { secrets: SecretBox; adapters: Pick<Adapters, 'sources'> }): Router {
  const { knex, temporal } = deps;
  const { retrieve, pagePicture } = deps.adapters.sources;
  const r = Router();
  const base = `${deps.links.publicUrl}/v1`;

  const documentJson = (d: DocumentRow) => ({
    id: d.id,
    file_name: d.file_name,
    url: d.url,
    format: d.format,
    size: d.size,
    sha256: d.sha256,
    status: d.status,
    error: d.error,
    pages_total: d.pages_total,
    pages_done: d.pages_done,
  });
  const versionJson = (v: VersionRow, docs: DocumentRow[]) => ({
    version: v.version,
    status: v.status,
    error: v.error,
    progress: { pages_done: v.pages_done, pages_total: v.pages_total },
    passages: v.passages,
    created_at: v.created_at,
    created_by: v.created_by,
    indexed_at: v.indexed_at,
    activated_at: v.activated_at,
    archived_at: v.archived_at,
    documents: docs.filter((d) => d.version_id === v.id).map(documentJson),
  });

  /** Sources with their versions (newest first), documents and the agents that use them. */
  const sourcesJson = async (workspaceId: string, sources: SourceRow[], allVersions: boolean) => {
    const versions = await listVersions(
      knex,
      sources.map((s) => s.id),
    );
    const shown = allVersions
      ? versions
      : versions.filter((v) =>
          sources.some(
            (s) => v.source_id === s.id && (v.version === s.latest_version || v.id === s.current_version_id),
          ),
        );
    const docs = await listDocuments(
      knex,
      shown.map((v) => v.id),
    );
    const usedBy = await agentsUsing(knex, workspaceId);
    return sources.map((s) => {
      const own = shown.filter((v) => v.source_id === s.id);
      const latest = own.find((v) => v.version === s.latest_version);
      // The versions are read in one statement after the source row: a version activated in between is already
      // `ready` there (activation archives the one it replaces in the same transaction), so that decides.
      const current = own.find((v) => v.status === 'ready') ?? own.find((v) => v.id === s.current_version_id);
      return {
        id: s.id,
        name: s.name,
        kind: s.kind,
        status: latest?.status ?? 'indexing',
        current_version: current?.version ?? null,
        latest_version: latest ? versionJson(latest, docs) : null,
        ...(allVersions ? { versions: own.map((v) => versionJson(v, docs)) } : {}),
        used_by: usedBy.get(s.name) ?? [],
        created_at: s.created_at,
        updated_at: s.updated_at,
        links: { self: `${base}/sources/${s.id}` },
      };
    });
  };

  const loadSource = async (workspaceId: string, id: string) => {
    const source = await getSource(knex, workspaceId, id);
    if (!source) throw new ApiError(404, 'source_not_found', `no source ${id} in this workspace`);
    return source;
  };

  const startIndexing = (version: VersionRow) => startSourceIndexing(deps, version);

  r.get('/sources', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const page = await listSourcesPage(knex, ws, parseQuery(queries.listSources, req.query));
    res.json({ data: await sourcesJson(ws, page.data, false), next_cursor: page.next_cursor });
  });

  // Files as multipart/form-data (any number of file fields; an optional "name" puts them all in one source,
  // otherwise each file is a source named after it), or {"url": …, "name": …} as JSON. A name that exists
  // already adds a version that replaces the current one once indexed.
  r.post('/sources', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const batches: { name: string; kind: 'files' | 'url'; documents: NewDocument[] }[] = [];
    if (req.is('multipart/form-data')) {
      const { fields, files } = await readUpload(req);
      if (files.length === 0)
        throw new ApiError(422, 'no_files', 'the upload has no files; send them as multipart/form-data file fields');
      const name = fields.name === undefined ? undefined : parseBody(sourceName, fields.name);
      const docs = files.map((f) => ({
        fileName: f.fileName,
        format: f.format,
        contentType: f.contentType,
        content: f.content,
      }));
      if (name) batches.push({ name, kind: 'files', documents: docs });
      else for (const d of docs) batches.push({ name: d.fileName, kind: 'files', documents: [d] });
    } else if (req.is('application/json')) {
      const body = parseBody(bodies.addSourceUrl, await readJson(req, res, deps.bodyLimit));
      const url = new URL(body.url);
      batches.push({
        name: body.name ?? `${url.host}${url.pathname === '/' ? '' : url.pathname}`,
        kind: 'url',
        documents: [
          {
            fileName: url.href,
            url: url.href,
            authHeaderSealed: body.auth_header ? deps.secrets.seal(body.auth_header) : undefined,
          },
        ],
      });
    } else {
      throw new ApiError(
        415,
        'unsupported_media_type',
        'upload files as multipart/form-data, or send {"url": "…"} as application/json',
      );
    }

    const created: SourceRow[] = [];
    for (const b of batches) {
      const { source, version } = await addVersion(knex, ws, { ...b, createdBy: byCaller(req) });
      await startIndexing(version);
      created.push(source);
    }
    const data = await sourcesJson(ws, created, false);
    if (data.length === 1) res.location(data[0].links.self);
    res.status(202).json({ data });
  });

  r.get('/sources/:id', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const source = await loadSource(ws, param(req, 'id'));
    res.json((await sourcesJson(ws, [source], true))[0]);
  });

  // A version's passages in document order: what an archived version said stays readable, each one opening as a
  // citation.
  r.get('/sources/:id/versions/:version/passages', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listSourceVersionPassages, req.query);
    const ws = req.auth!.workspace.id;
    const source = await loadSource(ws, param(req, 'id'));
    const number = Number(param(req, 'version'));
    const version = (await listVersions(knex, [source.id])).find((v) => v.version === number);
    if (!version)
      throw new ApiError(404, 'version_not_found', `source "${source.name}" has no version ${param(req, 'version')}`);
    const page = await listVersionPassages(knex, version.id, { limit: q.limit, offset: Number(q.cursor ?? 0) });
    res.json({
      data: page.data.map((p) => ({
        passage_id: p.id,
        document: p.url ?? p.file_name,
        page: p.page,
        paragraph: p.paragraph,
        part: p.part,
        text: p.text,
        citation_url: `${base}/passages/${p.id}`,
      })),
      next_cursor: page.next_cursor,
    });
  });

  r.delete('/sources/:id', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const source = await loadSource(ws, param(req, 'id'));
    const indexing = (await listVersions(knex, [source.id])).filter((v) => v.status === 'indexing');
    for (const v of indexing) {
      await temporal.workflow
        .getHandle(v.workflow_id!)
        .terminate('source deleted')
        .catch(() => undefined); // already finished
    }
    await deleteSource(knex, ws, source.id);
    res.status(204).end();
  });

  // Searches sources as a retrieve node would (all the workspace's sources unless some are named).
  r.post('/sources/search', requirePermission('read'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const body = parseBody(bodies.searchSources, req.body);
    const names = body.sources ?? (await listSources(knex, ws)).map((s) => s.name);
    // A misspelt name would otherwise just find nothing in it, and look like a source without an answer.
    const unknown = body.sources ? await unknownSources(knex, ws, [...new Set(names)]) : [];
    if (unknown.length > 0)
      throw new ApiError(
        422,
        'unknown_sources',
        unknown.map((u) => describeUnknownSource(u)).join('; '),
        {},
        {
          errors: unknown.map((u) => ({
            path: `sources[${names.indexOf(u.name)}]`,
            message: describeUnknownSource(u),
          })),
        },
      );
    const data = await retrieve(knex, {
      workspaceId: ws,
      sourceNames: names,
      query: body.query,
      topK: body.top_k,
      publicUrl: deps.links.publicUrl,
    }).catch((err: unknown) => {
      // The configured remote embedding provider failed: its reason is the useful part, not a 500.
      if (err instanceof EmbeddingProviderError) throw new ApiError(502, 'embedding_provider_failed', err.message);
      throw err;
    });
    res.json({ data });
  });

  // A citation: the passage where it was found, with the boxes of its lines on the page and the page's picture.
  r.get('/passages/:id', requirePermission('read'), async (req, res) => {
    const p = await getPassage(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!p) throw new ApiError(404, 'passage_not_found', `no passage ${param(req, 'id')} in this workspace`);
    res.json({
      id: String(p.id),
      source: { id: p.source_id, name: p.source_name },
      version: p.version,
      version_status: p.version_status,
      document: { id: p.document_id, file_name: p.file_name, format: p.format },
      page: p.page,
      paragraph: p.paragraph,
      part: p.part,
      text: p.text,
      boxes: p.boxes,
      words: p.words,
      ocr_confidence: p.ocr_confidence,
      page_size:
        p.page_width && p.page_height ? { width: p.page_width, height: p.page_height, unit: p.page_unit } : null,
      ocr: p.page_ocr ?? false,
      page_image_url: p.has_image ? `${base}/passages/${p.id}/page-image` : null,
      highlighted_image_url: p.has_image && p.boxes ? `${base}/passages/${p.id}/page-image?highlight=true` : null,
    });
  });

  // The page's picture; with ?highlight=true the passage's boxes are drawn on it.
  r.get('/passages/:id/page-image', requirePermission('read'), async (req, res) => {
    const { highlight } = parseQuery(queries.getCitationPageImage, req.query);
    const p = await getPassage(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!p) throw new ApiError(404, 'passage_not_found', `no passage ${param(req, 'id')} in this workspace`);
    const image = p.page === null ? undefined : await pagePicture(knex, p.document_id, p.page);
    if (!image)
      throw new ApiError(
        404,
        'no_page_image',
        `passage ${p.id} comes from a ${p.format} file, which has no page pictures`,
      );
    if (highlight !== 'true' || !p.boxes || !p.page_width) {
      res.type(image[0] === 0xff ? 'image/jpeg' : 'image/png').send(image);
      return;
    }
    const { createCanvas, loadImage } = await import('@napi-rs/canvas'); // loaded on first use
    const img = await loadImage(image);
    const canvas = createCanvas(img.width, img.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const k = img.width / p.page_width;
    ctx.fillStyle = 'rgba(255, 213, 0, 0.35)';
    ctx.strokeStyle = 'rgba(230, 120, 0, 0.9)';
    ctx.lineWidth = Math.max(1, img.width / 600);
    for (const b of p.boxes) {
      ctx.fillRect(b.x * k, b.y * k, b.width * k, b.height * k);
      ctx.strokeRect(b.x * k, b.y * k, b.width * k, b.height * k);
    }
    res.type('image/png').send(canvas.toBuffer('image/png'));
  });

  // The source context of run details: what each item's retrieval found.
  r.get('/runs/:id/source-context', requirePermission('read'), async (req, res) => {
    const { item } = parseQuery(queries.getRunSourceContext, req.query);
    const run = await getRun(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!run) throw new ApiError(404, 'run_not_found', `no run ${param(req, 'id')} in this workspace`);
    const q = knex('run_source_context').where({ run_id: run.id }).orderBy(['item_seq', 'at']);
    if (item !== undefined) q.andWhere({ item_seq: item });
    const rows = await q.select('item_seq', 'node_id', 'query', 'passages', 'at');
    // The citations of the items' answers that were checked and kept (dropped ones are in the run's log).
    const cq = knex('run_citations').where({ run_id: run.id, kept: true }).orderBy(['item_seq', 'node_id', 'at']);
    if (item !== undefined) cq.andWhere({ item_seq: item });
    const cited = await cq.select('item_seq', 'node_id', 'passage_id', 'source', 'version', 'page', 'paragraph');
    res.json({
      data: rows,
      citations: cited.map((c) => ({ ...c, citation_url: `${base}/passages/${c.passage_id}` })),
      next_cursor: null,
    });
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const sourceRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/sources',
    id: 'listSources',
    summary: 'Sources of the workspace by name, with their newest version (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Source')) },
  },
  {
    method: 'post',
    path: '/sources',
    id: 'addSources',
    summary: 'Upload files (several at once) or a URL; a name that exists adds a version that replaces it',
    scope: 'manage',
    bodyContent: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          properties: {
            name: {
              ...jsonSchema(sourceName),
              description: 'One source of all the files; without it, one per file.',
            },
            files: { type: 'array', items: { type: 'string', format: 'binary' }, maxItems: 20 },
          },
          required: ['files'],
        },
      },
      'application/json': { schema: jsonSchema(bodies.addSourceUrl) },
    },
    ok: { 202: obj({ data: { type: 'array', items: ref('Source') } }) },
    errors: [403],
  },
  {
    method: 'get',
    path: '/sources/{id}',
    id: 'getSource',
    summary: 'A source with all its versions and documents',
    scope: 'read',
    ok: { 200: ref('Source') },
  },
  {
    method: 'delete',
    path: '/sources/{id}',
    id: 'deleteSource',
    summary: 'Delete a source, its versions and passages',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/sources/{id}/versions/{version}/passages',
    id: 'listSourceVersionPassages',
    summary: "A version's passages in document order (archived versions too); ?limit, ?cursor",
    scope: 'read',
    ok: {
      200: list(
        obj({
          passage_id: { type: 'string' },
          document: { type: 'string' },
          page: nullable({ type: 'integer' }),
          paragraph: { type: 'integer' },
          part: { type: 'integer' },
          text: { type: 'string' },
          citation_url: { type: 'string' },
        }),
      ),
    },
    errors: [400],
  },
  {
    method: 'post',
    path: '/sources/search',
    id: 'searchSources',
    summary:
      'Search sources as a retrieve node does (current versions); a named source the workspace lacks is 422 unknown_sources, naming it',
    scope: 'read',
    body: jsonSchema(bodies.searchSources),
    ok: { 200: obj({ data: { type: 'array', items: ref('Passage') } }) },
    errors: [502],
  },
  {
    method: 'get',
    path: '/passages/{id}',
    id: 'openCitation',
    summary: 'A citation: the passage, its page, paragraph and boxes',
    scope: 'read',
    ok: { 200: ref('Citation') },
  },
  {
    method: 'get',
    path: '/passages/{id}/page-image',
    id: 'getCitationPageImage',
    summary: "The passage's page as a picture (?highlight=true draws its boxes)",
    scope: 'read',
    ok: { 200: 'file' },
  },
  {
    method: 'get',
    path: '/runs/{id}/source-context',
    id: 'getRunSourceContext',
    summary: "What each item's retrieval found, and the citations of its answer that were kept (?item=<seq>)",
    scope: 'read',
    ok: {
      200: obj({
        data: {
          type: 'array',
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            query: { type: 'string' },
            passages: { type: 'array', items: ref('Passage') },
            at: ts,
          }),
        },
        citations: {
          type: 'array',
          description:
            "Passages the model cited in an item's answer that the item had retrieved; a citation of anything else is dropped from the answer and logged on the run.",
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            passage_id: { type: 'string' },
            source: { type: 'string' },
            version: { type: 'integer' },
            page: nullable({ type: 'integer' }),
            paragraph: { type: 'integer' },
            citation_url: { type: 'string' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
    errors: [400],
  },
];
