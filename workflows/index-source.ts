// Indexing of one source version: check and count its documents, extract them page range by page range (a few
// at a time; progress is pages done / total, in the version's row and in the `indexProgress` query), embed the
// passages, then make the version current. A document that cannot be read fails the version with its reason;
// the version it was to replace stays in use.
import { ApplicationFailure, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { indexProgressQuery, type IndexProgress, type IndexSourceInput } from './contracts';

const pagesPerBatch = 10;
const parallelBatches = 2;

const db = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 10 },
});
const work = proxyActivities<Activities>({
  // Fetching a web page, or reading ten scanned pages by OCR on a busy machine.
  startToCloseTimeout: '20 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
});

export async function indexSource({ versionId }: IndexSourceInput): Promise<'ready' | 'archived' | 'failed'> {
  const progress: IndexProgress = { pagesTotal: 0, pagesDone: 0, stage: 'checking' };
  setHandler(indexProgressQuery, () => progress);
  try {
    const prepared = await work.prepareSourceVersion({ versionId });
    if ('failed' in prepared) return await fail(prepared.failed);
    const { documents } = prepared;
    progress.pagesTotal = documents.reduce((n, d) => n + d.pages, 0);
    progress.stage = 'extracting';
    const batches = documents.flatMap((d) =>
      Array.from({ length: Math.ceil(d.pages / pagesPerBatch) }, (_, i) => ({
        documentId: d.documentId,
        from: i * pagesPerBatch + 1,
        to: Math.min(d.pages, (i + 1) * pagesPerBatch),
      })),
    );
    let next = 0;
    let unreadable: string | undefined;
    const lane = async () => {
      while (next < batches.length && unreadable === undefined) {
        const batch = batches[next++];
        const extracted = await work.extractSourcePages(batch);
        if ('failed' in extracted) unreadable ??= extracted.failed;
        else progress.pagesDone += batch.to - batch.from + 1;
      }
    };
    await Promise.all(Array.from({ length: parallelBatches }, lane));
    if (unreadable !== undefined) return await fail(unreadable);
    progress.stage = 'embedding';
    await work.embedSourceVersion({ versionId });
    progress.stage = 'activating';
    const outcome = await db.activateSourceVersion({ versionId });
    progress.stage = 'done';
    return outcome;
  } catch (err) {
    return fail(reasonOf(err));
  }

  async function fail(reason: string): Promise<'failed'> {
    progress.stage = 'failed';
    await db.failSourceVersion({ versionId, reason });
    return 'failed';
  }
}

function reasonOf(err: unknown): string {
  let e: unknown = err;
  // Activity failures wrap the real reason in `cause`.
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  if (e instanceof ApplicationFailure && e.nonRetryable) return e.message;
  return `indexing failed: ${e instanceof Error ? e.message : String(e)}`;
}
