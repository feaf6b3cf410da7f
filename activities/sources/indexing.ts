// The activities of the indexing workflow (workflows/index-source.ts): fetch and check a version's documents,
// extract them in page ranges (progress: pages done / total), embed the passages, and make the version current
// (archiving the one it replaces). Documents and passages live in Postgres; the workflow carries ids only.
import { loadSecretBox, type SecretBox } from '../../db/secret-box';
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import type { ActivityDeps } from '../deps';
import { BlockedAddressError, publicFetch } from '../tools/ssrf-guard';
import { documentOpening, holdsWholeDocument, textToEmbed } from './document-context';
import { loadEmbedder } from './embedder';
import { extract, inspect } from './extract';
import {
  describeSize,
  formatFromContentType,
  formatFromName,
  maxBytesFor,
  maxDocumentBytes,
  UnreadableDocumentError,
  type Format,
} from '../../services/sources/formats';
import { toPassages } from './layout';

export interface DocumentPlan {
  documentId: string;
  pages: number;
}

const unreadable = (fileName: string, err: unknown) => {
  if (err instanceof UnreadableDocumentError) {
    const message = err.message.startsWith(fileName) ? err.message : `${fileName}: ${err.message}`;
    return ApplicationFailure.nonRetryable(message, 'UnreadableDocument');
  }
  return err;
};

export function createSourceIndexingActivities(deps: ActivityDeps) {
  const { knex, config } = deps;

  let secrets: SecretBox | undefined; // opened once, when a source first needs a credential

  async function fetchUrl(
    url: string,
    authorization?: string,
  ): Promise<{ content: Buffer; contentType: string | null; finalUrl: URL }> {
    let target = new URL(url);
    const origin = target.origin;
    // Redirects are followed by hand so that a credential goes only to its origin; each hop's address is checked
    // where it connects (publicFetch).
    for (let hop = 0; hop < 5; hop++) {
      const res = await publicFetch(config.http.allowHosts)(target, {
        redirect: 'manual',
        headers: {
          accept: 'text/html,application/pdf,*/*;q=0.8',
          'user-agent': 'Cadre source indexer',
          // A credential goes only to the origin it was given for, not to wherever a redirect points.
          ...(authorization && target.origin === origin ? { authorization } : {}),
        },
        signal: AbortSignal.timeout(30_000),
      }).catch((err: unknown) => {
        if (err instanceof BlockedAddressError)
          throw ApplicationFailure.nonRetryable(`${url} cannot be fetched: ${err.message}`, 'BlockedAddress');
        throw err;
      });
      if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
        target = new URL(res.headers.get('location')!, target);
        continue;
      }
      if (res.status >= 500 || res.status === 429)
        throw ApplicationFailure.retryable(`${target.host} answered ${res.status}`, 'FetchRetryable');
      if (!res.ok)
        throw ApplicationFailure.nonRetryable(`${url} answered ${res.status} ${res.statusText}`, 'FetchFailed');
      const declared = Number(res.headers.get('content-length'));
      if (declared > maxDocumentBytes) throw tooLarge(url, declared);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body ?? []) {
        size += (chunk as Uint8Array).length;
        if (size > maxDocumentBytes) throw tooLarge(url, size);
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
      return { content: Buffer.concat(chunks), contentType: res.headers.get('content-type'), finalUrl: target };
    }
    throw ApplicationFailure.nonRetryable(`${url} redirects more than 5 times`, 'FetchFailed');
  }

  const tooLarge = (what: string, size: number) =>
    ApplicationFailure.nonRetryable(
      `${what} is larger than ${describeSize(maxDocumentBytes)} (at least ${describeSize(size)}); documents can be at most ${describeSize(maxDocumentBytes)}`,
      'TooLarge',
    );

  /** Fetches web documents, checks every document is what it claims, and counts the pages to extract. */
  async function prepare({ versionId }: { versionId: string }): Promise<DocumentPlan[]> {
    const docs = await knex('source_documents')
      .where({ version_id: versionId })
      .orderBy('position')
      .select(
        'id',
        'file_name',
        'url',
        'format',
        'content_type',
        'auth_header_sealed',
        knex.raw('content is null as missing'),
      );
    const plan: DocumentPlan[] = [];
    // Every document is checked, so a version with two broken files names both at once.
    const unreadableDocuments: string[] = [];
    for (const doc of docs) {
      try {
        plan.push(await prepareDocument(doc));
      } catch (err) {
        const final = err instanceof ApplicationFailure && err.nonRetryable;
        // A retried error is kept too, so that if the retries run out the version's failure names this document.
        await knex('source_documents')
          .where({ id: doc.id })
          .update({ ...(final ? { status: 'failed' } : {}), error: (err as Error).message });
        if (!final) throw err;
        unreadableDocuments.push(err.message);
      }
    }
    if (unreadableDocuments.length > 0)
      throw ApplicationFailure.nonRetryable(unreadableDocuments.join('; '), 'UnreadableDocument');
    await knex('source_versions')
      .where({ id: versionId })
      .update({ pages_total: plan.reduce((n, d) => n + d.pages, 0), pages_done: 0 });
    return plan;
  }

  /** Fetches a web document if need be, checks it is what it claims and counts its pages. */
  async function prepareDocument(doc: {
    id: string;
    file_name: string;
    url: string | null;
    format: string | null;
    content_type: string | null;
    auth_header_sealed: string | null;
    missing: boolean;
  }): Promise<DocumentPlan> {
    let fileName: string = doc.file_name;
    let format = doc.format as Format | null;
    let content: Buffer;
    if (doc.url && doc.missing) {
      const authorization = doc.auth_header_sealed
        ? (secrets ??= loadSecretBox(config)).open(doc.auth_header_sealed)
        : undefined;
      const fetched = await fetchUrl(doc.url, authorization);
      content = fetched.content;
      format = formatFromContentType(fetched.contentType) ?? formatFromName(fetched.finalUrl.pathname) ?? 'html';
      if (content.length > maxBytesFor(format)) throw tooLarge(doc.url, content.length);
      fileName = doc.url;
      await knex('source_documents')
        .where({ id: doc.id })
        .update({ content, format, content_type: fetched.contentType, size: content.length });
    } else {
      content = (await knex('source_documents').where({ id: doc.id }).first('content')).content;
    }
    if (!format) throw ApplicationFailure.nonRetryable(`${fileName}: unsupported kind of file`, 'Unsupported');
    let pages: number;
    try {
      pages = await inspect(fileName, format, content);
    } catch (err) {
      throw unreadable(fileName, err);
    }
    await knex('source_documents')
      .where({ id: doc.id })
      .update({ pages_total: pages, status: 'extracting', error: null });
    return { documentId: doc.id, pages };
  }

  /** Extracts pages `from`..`to` of one document into passages; a retry replaces what an attempt wrote. */
  async function extractPages({
    documentId,
    from,
    to,
  }: {
    documentId: string;
    from: number;
    to: number;
  }): Promise<number> {
    const doc = await knex('source_documents as d')
      .join('source_versions as v', 'v.id', 'd.version_id')
      .where('d.id', documentId)
      .first(
        'd.id',
        'd.file_name',
        'd.url',
        'd.format',
        'd.content',
        'd.pages_total',
        'v.id as version_id',
        'v.source_id',
        'v.workspace_id',
      );
    let extraction;
    try {
      extraction = await extract(doc.format, doc.content, from, to);
    } catch (err) {
      // An unreadable document fails for good; any other error is retried, and kept on the document meanwhile so
      // that, if the retries run out, the version's failure says which document it was.
      const failed = err instanceof UnreadableDocumentError;
      await knex('source_documents')
        .where({ id: documentId })
        .update({ ...(failed ? { status: 'failed' } : {}), error: (err as Error).message });
      throw unreadable(doc.url ?? doc.file_name, err);
    }
    const passages = toPassages(extraction.paragraphs);
    const units = to - from + 1;
    await knex.transaction(async (trx) => {
      // A range read while a sibling failed the version is dropped: a failed version keeps no passages.
      const version = await trx('source_versions').where({ id: doc.version_id }).forUpdate().first('status');
      if (version.status === 'failed') return;
      const pageRange = (q: Knex.QueryBuilder) => (doc.format === 'pdf' ? q.whereBetween('page', [from, to]) : q);
      await pageRange(trx('passages').where({ document_id: documentId })).delete();
      await pageRange(trx('source_pages').where({ document_id: documentId })).delete();
      if (extraction.pages.length > 0) {
        await trx('source_pages').insert(
          extraction.pages.map((p) => ({
            document_id: documentId,
            page: p.page,
            width: p.width ?? null,
            height: p.height ?? null,
            unit: p.unit ?? null,
            ocr: p.ocr ?? false,
            ocr_confidence: p.ocrConfidence ?? null,
            image: p.image ?? null,
          })),
        );
      }
      for (let i = 0; i < passages.length; i += 500) {
        await trx('passages').insert(
          passages.slice(i, i + 500).map((p) => ({
            workspace_id: doc.workspace_id,
            source_id: doc.source_id,
            version_id: doc.version_id,
            document_id: documentId,
            page: p.page,
            paragraph: p.paragraph,
            part: p.part,
            text: p.text,
            boxes: p.boxes ? JSON.stringify(p.boxes) : null,
            words: p.words ? JSON.stringify(p.words) : null,
            ocr_confidence: p.ocrConfidence,
          })),
        );
      }
      // Progress counts each range once, even when an attempt is retried.
      const [d] = await trx('source_documents')
        .where({ id: documentId })
        .update({ pages_done: trx.raw('least(pages_total, pages_done + ?)', [units]) })
        .returning(['pages_done', 'pages_total']);
      if (d.pages_done >= d.pages_total)
        await trx('source_documents').where({ id: documentId }).update({ status: 'done', error: null });
      await trx('source_versions')
        .where({ id: doc.version_id })
        .update({ pages_done: trx.raw('least(pages_total, pages_done + ?)', [units]) });
    });
    return passages.length;
  }

  /** A document's opening is read from its first passages, these many at most. */
  const openingPassages = 8;

  /** Gives the version's passages their document's opening as context (document-context.ts). */
  async function setDocumentContext(versionId: string): Promise<void> {
    const documents: { id: string }[] = await knex('source_documents').where({ version_id: versionId }).select('id');
    for (const { id } of documents) {
      const first: { text: string }[] = await knex('passages')
        .where({ document_id: id })
        .orderByRaw('page nulls first, paragraph, part, id')
        .limit(openingPassages + 1)
        .select('text');
      const texts = first.slice(0, openingPassages).map((p) => p.text);
      const opening = documentOpening(texts);
      if (opening === '' || holdsWholeDocument(opening, texts, first.length > openingPassages)) continue;
      // One statement per document (the embedded database serves one statement at a time).
      await knex('passages').where({ document_id: id }).update({ context: opening });
    }
  }

  return {
    // A document that cannot be read is an outcome, not an activity failure: it comes back as `failed` with the
    // reason, so the workflow fails the version without retries (and without a stack trace in the logs).
    prepareSourceVersion: (args: { versionId: string }) =>
      asOutcome(() => prepare(args)).then((o) => ('failed' in o ? o : { documents: o.value })),
    extractSourcePages: (args: { documentId: string; from: number; to: number }) =>
      asOutcome(() => extractPages(args)).then((o) => ('failed' in o ? o : { passages: o.value })),

    /** Embeds the version's passages that have no vector yet; nothing to do without an embedding model. */
    async embedSourceVersion({ versionId }: { versionId: string }): Promise<number> {
      await setDocumentContext(versionId);
      const embedder = await loadEmbedder();
      if (!embedder) return 0;
      let done = 0;
      for (;;) {
        const batch: { id: number; text: string; context: string | null }[] = await knex('passages')
          .where({ version_id: versionId })
          .whereNull(embedder.column)
          .orderBy('id')
          .limit(64)
          .select('id', 'text', 'context');
        if (batch.length === 0) return done;
        const vectors = await embedder.embed(batch.map(textToEmbed), 'document');
        // One statement per batch (the embedded database serves one statement at a time).
        await knex.raw(
          `update passages set ${embedder.column} = v.e::vector
             from (select unnest(?::bigint[]) as id, unnest(?::text[]) as e) v
            where passages.id = v.id`,
          [batch.map((p) => p.id), vectors.map((v) => JSON.stringify(v))],
        );
        done += batch.length;
      }
    },

    /**
     * Makes the version the one agents use and archives the one it replaces. A version that finishes after a
     * newer one was already made current is archived at once: the newest upload wins.
     */
    async activateSourceVersion({ versionId }: { versionId: string }): Promise<'ready' | 'archived'> {
      return knex.transaction(async (trx) => {
        const version = await trx('source_versions').where({ id: versionId }).first();
        const source = await trx('sources').where({ id: version.source_id }).forUpdate().first();
        const passages = Number(
          (await trx('passages').where({ version_id: versionId }).count({ n: '*' }).first())?.n ?? 0,
        );
        if (version.status === 'ready' || version.status === 'archived') return version.status;
        const current = source.current_version_id
          ? await trx('source_versions').where({ id: source.current_version_id }).first()
          : undefined;
        if (current && current.version > version.version) {
          await trx('source_versions').where({ id: versionId }).update({
            status: 'archived',
            passages,
            indexed_at: trx.fn.now(),
            archived_at: trx.fn.now(),
          });
          return 'archived';
        }
        if (current) {
          await trx('source_versions')
            .where({ id: current.id })
            .update({ status: 'archived', archived_at: trx.fn.now() });
        }
        await trx('source_versions').where({ id: versionId }).update({
          status: 'ready',
          passages,
          indexed_at: trx.fn.now(),
          activated_at: trx.fn.now(),
        });
        await trx('sources')
          .where({ id: source.id })
          .update({ current_version_id: versionId, updated_at: trx.fn.now() });
        return 'ready';
      });
    },

    /**
     * The version failed: the reason is kept, naming the document that failed, and the previous version (if any)
     * stays in use. Every other document ends in a final state: those not yet read are `skipped` because of the
     * failed one, or `failed` with the version's reason when no document was to blame.
     */
    async failSourceVersion({ versionId, reason }: { versionId: string; reason: string }): Promise<void> {
      await knex.transaction(async (trx) => {
        // Locked first, as extractPages locks it, so a range still being written cannot land after this.
        await trx('source_versions').where({ id: versionId }).forUpdate().first('id');
        const docs: { id: string; name: string; status: string; error: string | null }[] = await trx('source_documents')
          .where({ version_id: versionId })
          .orderBy('position')
          .select('id', trx.raw('coalesce(url, file_name) as name'), 'status', 'error');
        // The documents to blame: those found unreadable, else one whose retries ran out (its error is kept).
        let failed = docs.filter((d) => d.status === 'failed').map((d) => d.name);
        if (failed.length === 0) {
          const stuck = docs.filter((d) => d.status !== 'done' && d.error !== null);
          await trx('source_documents')
            .whereIn(
              'id',
              stuck.map((d) => d.id),
            )
            .update({ status: 'failed' });
          failed = stuck.map((d) => d.name);
        }
        const error =
          failed.length === 0 || failed.some((name) => reason.includes(name)) ? reason : `${failed[0]}: ${reason}`;
        await trx('source_documents')
          .where({ version_id: versionId })
          .whereIn('status', ['pending', 'extracting'])
          .update(
            failed.length > 0
              ? { status: 'skipped', error: `not indexed, because ${failed.join(', ')} failed` }
              : { status: 'failed', error: reason },
          );
        await trx('source_versions').where({ id: versionId }).update({ status: 'failed', error });
        await trx('passages').where({ version_id: versionId }).delete();
      });
    },
  };
}

async function asOutcome<T>(fn: () => Promise<T>): Promise<{ value: T } | { failed: string }> {
  try {
    return { value: await fn() };
  } catch (err) {
    if (err instanceof ApplicationFailure && err.nonRetryable) return { failed: err.message };
    throw err;
  }
}
