// Optical character recognition with tesseract.js and the English model shipped in @tesseract.js-data/eng (no
// download at run time). Recognition runs in a pool of worker threads inside the worker process, sized to the
// machine (CADRE_OCR_WORKERS overrides), so it never holds up the web process nor the worker's event loop; the
// pool closes itself when idle, since each thread holds the model in memory.
import os from 'node:os';
import path from 'node:path';
import type { Scheduler } from 'tesseract.js';
import { binarisedPicture } from './binarise';
import type { Line, Word } from './layout';

const langPath = path.join(path.dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
const idleMs = 60_000;

export function ocrPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const configured = Number(env.CADRE_OCR_WORKERS);
  if (Number.isInteger(configured) && configured > 0) return configured;
  // One core stays free for the worker's own event loop (heartbeats, database I/O).
  return Math.max(1, Math.min(4, os.availableParallelism() - 1));
}

let pool: Promise<Scheduler> | undefined;
let idleTimer: NodeJS.Timeout | undefined;
let jobs = 0;

async function startPool(): Promise<Scheduler> {
  const { createScheduler, createWorker, OEM } = await import('tesseract.js'); // loaded on first use
  const scheduler = createScheduler();
  const workers = await Promise.all(
    Array.from({ length: ocrPoolSize() }, () =>
      createWorker('eng', OEM.LSTM_ONLY, { langPath, cacheMethod: 'none', gzip: true }),
    ),
  );
  for (const w of workers) scheduler.addWorker(w);
  return scheduler;
}

async function withPool<T>(fn: (s: Scheduler) => Promise<T>): Promise<T> {
  clearTimeout(idleTimer);
  jobs++;
  pool ??= startPool();
  try {
    return await fn(await pool);
  } finally {
    if (--jobs === 0) {
      idleTimer = setTimeout(() => void stopOcr(), idleMs);
      idleTimer.unref();
    }
  }
}

/** Ends the pool's threads (tests and shutdown; otherwise it ends itself when idle). */
export async function stopOcr(): Promise<void> {
  const p = pool;
  pool = undefined;
  if (p) await (await p).terminate();
}

export interface OcrPage {
  lines: Line[];
  /** Indexes of lines that start a paragraph, as the recogniser segmented the page. */
  paragraphStarts: Set<number>;
  /** Mean word confidence, 0–100. */
  confidence: number;
}

let pagesInHand = 0;
const waitingPages: (() => void)[] = [];

/**
 * Runs `fn` (rendering a page for OCR and reading it) while at most one page per OCR thread is in hand: a 300 dpi
 * page holds about 100 MB of pictures (rendered, decoded, binarised) until the collector frees them, and twenty
 * scanned PDFs indexed at once took the worker process past 1.5 GB (npm run bench:footprint -- --run) while the
 * pool read one page at a time anyway.
 */
export async function withOcrSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (pagesInHand < ocrPoolSize()) pagesInHand++;
  else await new Promise<void>((resolve) => waitingPages.push(resolve)); // the slot is handed over, not freed
  try {
    return await fn();
  } finally {
    const next = waitingPages.shift();
    if (next) next();
    else pagesInHand--;
  }
}

type TBox = { x0: number; y0: number; x1: number; y1: number };
const box = (b: TBox) => ({ x: b.x0, y: b.y0, width: b.x1 - b.x0, height: b.y1 - b.y0 });

/** Recognises a PNG or JPEG, in black and white (binarise.ts): lines and words with their boxes (in the image's pixels) and confidence. */
export async function recognize(image: Buffer): Promise<OcrPage> {
  return recognizeBinarised(await binarisedPicture(image));
}

/** Recognises a page already in black and white, as a binary greymap (binarise.ts's binarisedCanvas). */
export async function recognizeBinarised(blackAndWhite: Buffer): Promise<OcrPage> {
  const result = await withPool((s) => s.addJob('recognize', blackAndWhite, {}, { blocks: true, text: false }));
  const lines: Line[] = [];
  const paragraphStarts = new Set<number>();
  const confidences: number[] = [];
  for (const block of result.data.blocks ?? []) {
    for (const para of block.paragraphs) {
      paragraphStarts.add(lines.length);
      for (const line of para.lines) {
        const words: Word[] = line.words
          .filter((w) => w.text.trim() !== '')
          .map((w) => ({ text: w.text, confidence: Math.round(w.confidence), box: box(w.bbox) }));
        if (words.length === 0) continue;
        confidences.push(...words.map((w) => w.confidence));
        lines.push({
          text: words.map((w) => w.text).join(' '),
          box: box(line.bbox),
          words,
          confidence: Math.round(line.confidence),
        });
      }
    }
  }
  const confidence = confidences.length ? confidences.reduce((a, b) => a + b, 0) / confidences.length : 0;
  return { lines, paragraphStarts, confidence: Math.round(confidence * 10) / 10 };
}
