// Images (PNG, JPEG, GIF, TIFF — each page of a multi-page TIFF): read by OCR, boxes in the image's pixels.
import type { ImageFormat } from '../../services/sources/formats';
import { UnreadableDocumentError } from '../../services/sources/formats';
import { paragraphsFromLines, type Extraction } from './layout';
import { recognize, withOcrSlot } from './ocr';

interface Picture {
  png: Buffer;
  width: number;
  height: number;
}

/** The image's pages as PNG or JPEG (what the recogniser and browsers read). */
export async function pictures(bytes: Buffer, format: ImageFormat): Promise<Picture[]> {
  // Loaded on first use: a service that never reads an image does not hold them.
  const [{ createCanvas, loadImage }, { default: UTIF }] = await Promise.all([
    import('@napi-rs/canvas'),
    import('utif2'),
  ]);
  try {
    if (format === 'tiff') {
      const ifds = UTIF.decode(bytes).filter((ifd) => ifd.t256 !== undefined && ifd.t257 !== undefined);
      return ifds.map((ifd) => {
        UTIF.decodeImage(bytes, ifd);
        const rgba = UTIF.toRGBA8(ifd);
        const canvas = createCanvas(ifd.width, ifd.height);
        const ctx = canvas.getContext('2d');
        const data = ctx.createImageData(ifd.width, ifd.height);
        data.data.set(rgba);
        ctx.putImageData(data, 0, 0);
        return { png: canvas.toBuffer('image/png'), width: ifd.width, height: ifd.height };
      });
    }
    const img = await loadImage(bytes);
    if (format === 'png' || format === 'jpeg') return [{ png: bytes, width: img.width, height: img.height }];
    // GIF: its first frame, as PNG (the recogniser does not read GIF)
    const canvas = createCanvas(img.width, img.height);
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = 'white';
    ctx.fillRect(0, 0, img.width, img.height);
    ctx.drawImage(img, 0, 0);
    return [{ png: canvas.toBuffer('image/png'), width: img.width, height: img.height }];
  } catch (err) {
    throw new UnreadableDocumentError(
      `the image cannot be decoded (it may be damaged or truncated): ${(err as Error).message}`,
    );
  }
}

export async function extractImage(bytes: Buffer, format: ImageFormat): Promise<Extraction> {
  const out: Extraction = { pages: [], paragraphs: [] };
  const pages = await pictures(bytes, format);
  for (const [i, pic] of pages.entries()) {
    const page = i + 1;
    const ocr = await withOcrSlot(() => recognize(pic.png));
    out.pages.push({
      page,
      width: pic.width,
      height: pic.height,
      unit: 'px',
      ocr: true,
      ocrConfidence: ocr.confidence,
      image: pic.png,
    });
    out.paragraphs.push(...paragraphsFromLines(ocr.lines, page, ocr.paragraphStarts));
  }
  return out;
}
