// Pages are read by OCR in black and white: a photo's grey paper, shading and colour cast make the recogniser
// misread figures ("13 80" for "13.80" at a receipt's right edge), and a threshold chosen from the page's own
// histogram (Otsu's method) separates ink from paper. The image keeps its size, so boxes stay in its pixels.
import type { Canvas, SKRSContext2D } from '@napi-rs/canvas';

/** Luma (ITU-R BT.601) of each RGBA pixel. */
export function greyscale(rgba: Uint8ClampedArray | Uint8Array): Uint8Array {
  const grey = new Uint8Array(rgba.length / 4);
  for (let i = 0; i < grey.length; i++) {
    const o = i * 4;
    grey[i] = Math.round(0.299 * rgba[o] + 0.587 * rgba[o + 1] + 0.114 * rgba[o + 2]);
  }
  return grey;
}

/** The grey level that best splits the pixels into two classes (Otsu 1979: greatest between-class variance). */
export function otsuThreshold(grey: Uint8Array): number {
  const histogram = new Array<number>(256).fill(0);
  for (const g of grey) histogram[g]++;
  const total = grey.length;
  let sumAll = 0;
  for (let g = 0; g < 256; g++) sumAll += g * histogram[g];
  let best = 127;
  let bestVariance = -1;
  let below = 0;
  let sumBelow = 0;
  for (let t = 0; t < 256; t++) {
    below += histogram[t];
    if (below === 0) continue;
    const above = total - below;
    if (above === 0) break;
    sumBelow += t * histogram[t];
    const meanBelow = sumBelow / below;
    const meanAbove = (sumAll - sumBelow) / above;
    const variance = below * above * (meanBelow - meanAbove) ** 2;
    if (variance > bestVariance) {
      bestVariance = variance;
      best = t;
    }
  }
  return best;
}

/** Grey levels made black (ink: at or below the page's Otsu threshold) or white (paper), in place. */
export function binariseGrey(grey: Uint8Array): Uint8Array {
  const threshold = otsuThreshold(grey);
  for (let i = 0; i < grey.length; i++) grey[i] = grey[i] <= threshold ? 0 : 255;
  return grey;
}

/** Rows of the canvas read at a time: a whole 300 dpi page's RGBA copy would be another 34 MB in hand. */
const bandRows = 256;

/**
 * A drawn page in black and white, of the same size, for the recogniser. As a binary greymap (PGM, "P5"), which
 * Leptonica reads as is: encoding a PNG here and decoding it again in the recogniser's WebAssembly cost about 0.6 s
 * of a 300 dpi page's OCR (npm run bench:sources). The grey levels are written straight into the greymap.
 */
export function binarisedCanvas(ctx: Pick<SKRSContext2D, 'getImageData'>, width: number, height: number): Buffer {
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`, 'ascii');
  const pgm = Buffer.allocUnsafe(header.length + width * height);
  header.copy(pgm);
  const grey = pgm.subarray(header.length);
  for (let y = 0; y < height; y += bandRows) {
    const rows = Math.min(bandRows, height - y);
    grey.set(greyscale(ctx.getImageData(0, y, width, rows).data), y * width);
  }
  binariseGrey(grey);
  return pgm;
}

/** A PNG or JPEG page in black and white (binarisedCanvas), of the same size. */
export async function binarisedPicture(image: Buffer): Promise<Buffer> {
  const { createCanvas, loadImage } = await import('@napi-rs/canvas'); // loaded on first use: a native library
  const img = await loadImage(image);
  const canvas = createCanvas(img.width, img.height);
  try {
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = 'white';
    ctx.fillRect(0, 0, img.width, img.height);
    ctx.drawImage(img, 0, 0);
    return binarisedCanvas(ctx, img.width, img.height);
  } finally {
    freeCanvas(canvas);
  }
}

/**
 * Gives a canvas's pixels back now. Its memory is native, unseen by the garbage collector, which collected a page's
 * canvases (34 MB each at 300 dpi) long after they were dropped: shrunk to one pixel, it lets its surface go at once.
 */
export function freeCanvas(canvas: Pick<Canvas, 'width' | 'height'>): void {
  canvas.width = 1;
  canvas.height = 1;
}
