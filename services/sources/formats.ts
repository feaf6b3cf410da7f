// Which files a source accepts, how large they may be, and what a file really is (its first bytes), so a file
// whose name lies about its content fails with a reason a person understands instead of a parser's stack trace.

export const documentFormats = [
  'pdf',
  'docx',
  'doc',
  'xlsx',
  'xls',
  'pptx',
  'txt',
  'csv',
  'json',
  'xml',
  'md',
  'html',
] as const;
export const imageFormats = ['png', 'jpeg', 'gif', 'tiff'] as const;
export type DocumentFormat = (typeof documentFormats)[number];
export type ImageFormat = (typeof imageFormats)[number];
export type Format = DocumentFormat | ImageFormat;

export const maxDocumentBytes = 50 * 1024 * 1024;
export const maxImageBytes = 20 * 1024 * 1024;

const byExtension: Record<string, Format> = {
  pdf: 'pdf',
  docx: 'docx',
  doc: 'doc',
  xlsx: 'xlsx',
  xls: 'xls',
  pptx: 'pptx',
  txt: 'txt',
  text: 'txt',
  csv: 'csv',
  json: 'json',
  xml: 'xml',
  md: 'md',
  markdown: 'md',
  html: 'html',
  htm: 'html',
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  gif: 'gif',
  tif: 'tiff',
  tiff: 'tiff',
};

export const acceptedExtensions = Object.keys(byExtension)
  .map((e) => `.${e}`)
  .join(', ');

export function formatFromName(fileName: string): Format | undefined {
  const m = /\.([A-Za-z0-9]+)$/.exec(fileName);
  return m ? byExtension[m[1].toLowerCase()] : undefined;
}

export const isImage = (f: Format): f is ImageFormat => (imageFormats as readonly string[]).includes(f);

export function formatFromContentType(contentType: string | null | undefined): Format | undefined {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const map: Record<string, Format> = {
    'text/html': 'html',
    'application/xhtml+xml': 'html',
    'text/plain': 'txt',
    'text/markdown': 'md',
    'text/csv': 'csv',
    'application/json': 'json',
    'application/xml': 'xml',
    'text/xml': 'xml',
    'application/pdf': 'pdf',
    'image/png': 'png',
    'image/jpeg': 'jpeg',
    'image/gif': 'gif',
    'image/tiff': 'tiff',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
    'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
    'application/msword': 'doc',
    'application/vnd.ms-excel': 'xls',
  };
  return map[type];
}

export function maxBytesFor(f: Format): number {
  return isImage(f) ? maxImageBytes : maxDocumentBytes;
}

export const describeSize = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** What the bytes are, from their signature. */
export type Signature = 'pdf' | 'zip' | 'ole' | 'png' | 'jpeg' | 'gif' | 'tiff' | 'text' | 'binary' | 'empty';

export function sniff(bytes: Uint8Array): Signature {
  if (bytes.length === 0) return 'empty';
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  const head = Buffer.from(bytes.subarray(0, 1024)).toString('latin1');
  if (head.includes('%PDF-')) return 'pdf';
  if (starts(0x50, 0x4b, 0x03, 0x04) || starts(0x50, 0x4b, 0x05, 0x06)) return 'zip';
  if (starts(0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1)) return 'ole';
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'png';
  if (starts(0xff, 0xd8, 0xff)) return 'jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'gif';
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return 'tiff';
  return isText(bytes) ? 'text' : 'binary';
}

function isText(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 64 * 1024);
  if (sample.includes(0)) return false;
  try {
    // A multi-byte character cut at the sample's end is not an error.
    new TextDecoder('utf-8', { fatal: true }).decode(sample.subarray(0, lastCharBoundary(sample)));
    return true;
  } catch {
    return false;
  }
}

function lastCharBoundary(b: Uint8Array): number {
  let end = b.length;
  for (let i = b.length - 1; i >= Math.max(0, b.length - 4); i--) {
    if ((b[i] & 0xc0) === 0x80) continue; // continuation byte
    if (b[i] >= 0xc0) end = i; // a lead byte whose sequence may be cut
    break;
  }
  return end;
}

const signatureNames: Record<Signature, string> = {
  pdf: 'a PDF',
  zip: 'a ZIP archive',
  ole: 'an old-style Office file',
  png: 'a PNG image',
  jpeg: 'a JPEG image',
  gif: 'a GIF image',
  tiff: 'a TIFF image',
  text: 'plain text',
  binary: 'binary data',
  empty: 'empty',
};

const expected: Record<Format, Signature[]> = {
  pdf: ['pdf'],
  docx: ['zip'],
  xlsx: ['zip'],
  pptx: ['zip'],
  doc: ['ole'],
  xls: ['ole'],
  txt: ['text'],
  csv: ['text'],
  json: ['text'],
  xml: ['text'],
  md: ['text'],
  html: ['text'],
  png: ['png'],
  jpeg: ['jpeg'],
  gif: ['gif'],
  tiff: ['tiff'],
};

export const formatNames: Record<Format, string> = {
  pdf: 'PDF',
  docx: 'Word document (.docx)',
  doc: 'Word 97–2003 document (.doc)',
  xlsx: 'Excel workbook (.xlsx)',
  xls: 'Excel 97–2003 workbook (.xls)',
  pptx: 'PowerPoint presentation (.pptx)',
  txt: 'text file',
  csv: 'CSV file',
  json: 'JSON file',
  xml: 'XML file',
  md: 'Markdown file',
  html: 'web page',
  png: 'PNG image',
  jpeg: 'JPEG image',
  gif: 'GIF image',
  tiff: 'TIFF image',
};

export class UnreadableDocumentError extends Error {}

/** Throws when the content is not what the file's name (or a web server's content type) says it is. */
export function checkSignature(fileName: string, format: Format, bytes: Uint8Array): void {
  const sig = sniff(bytes);
  if (sig === 'empty') throw new UnreadableDocumentError(`${fileName} is empty`);
  if (expected[format].includes(sig)) return;
  // A password-protected .docx/.xlsx/.pptx is stored as an encrypted OLE container, not a ZIP.
  if (sig === 'ole' && ['docx', 'xlsx', 'pptx'].includes(format) && isEncryptedOoxml(bytes)) {
    throw new UnreadableDocumentError(
      `${fileName} is password-protected; remove the password (save an unprotected copy) and upload it again`,
    );
  }
  throw new UnreadableDocumentError(
    `${fileName} is named like a ${formatNames[format]} but its content is ${signatureNames[sig]}; check that it is the right file, or rename it with the right extension`,
  );
}

/** An OLE container holding the streams Office writes for an encrypted OOXML document. */
export function isEncryptedOoxml(bytes: Uint8Array): boolean {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (
    buf.includes(Buffer.from('EncryptionInfo', 'utf16le')) || buf.includes(Buffer.from('EncryptedPackage', 'utf16le'))
  );
}
