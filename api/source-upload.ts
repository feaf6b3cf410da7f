// Reading a multipart upload of source files with busboy: every file kept in memory up to its limit (50 MB for
// documents, 20 MB for images), with 413 naming the file that is too large and 415 one Cadre cannot read.
import busboy from 'busboy';
import type { Request } from 'express';
import {
  acceptedExtensions,
  describeSize,
  formatFromName,
  isImage,
  maxBytesFor,
  maxDocumentBytes,
  type Format,
} from '../services/sources/formats';
import { ApiError } from './problem';
import { checkBody } from './validation';

export interface UploadedFile {
  fileName: string;
  format: Format;
  contentType: string;
  content: Buffer;
}

export const maxFilesPerUpload = 20;
const maxUploadBytes = 200 * 1024 * 1024;

export async function readUpload(req: Request): Promise<{ fields: Record<string, string>; files: UploadedFile[] }> {
  const fields: Record<string, string> = {};
  const received: {
    field: string;
    fileName: string;
    contentType: string;
    chunks: Buffer[];
    size: number;
    truncated: boolean;
  }[] = [];
  let total = 0;
  let tooMany = false;
  await new Promise<void>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: req.headers,
        limits: { fileSize: maxDocumentBytes, files: maxFilesPerUpload, fields: 20, fieldSize: 10_000 },
        defParamCharset: 'utf8',
      });
    } catch (err) {
      reject(new ApiError(400, 'malformed_multipart', `the upload cannot be read: ${(err as Error).message}`));
      return;
    }
    bb.on('field', (name, value) => (fields[name] = value));
    bb.on('file', (field, stream, info) => {
      const file = {
        field,
        fileName: info.filename ?? '',
        contentType: info.mimeType,
        chunks: [] as Buffer[],
        size: 0,
        truncated: false,
      };
      received.push(file);
      stream.on('data', (chunk: Buffer) => {
        total += chunk.length;
        file.size += chunk.length;
        if (total <= maxUploadBytes) file.chunks.push(chunk);
      });
      stream.on('limit', () => (file.truncated = true));
    });
    bb.on('filesLimit', () => (tooMany = true));
    bb.on('error', (err) =>
      reject(new ApiError(400, 'malformed_multipart', `the upload cannot be read: ${(err as Error).message}`)),
    );
    bb.on('close', () => resolve());
    req.pipe(bb);
  });

  if (tooMany) throw new ApiError(413, 'too_many_files', `upload at most ${maxFilesPerUpload} files at once`);
  if (total > maxUploadBytes)
    throw new ApiError(
      413,
      'upload_too_large',
      `one upload can carry at most ${describeSize(maxUploadBytes)} of files; send them in several uploads`,
    );
  checkBody(fields);
  const files: UploadedFile[] = [];
  for (const f of received) {
    checkBody(f.fileName, `${f.field}.filename`);
    const fileName = f.fileName.split(/[\\/]/).pop()!.trim();
    if (!fileName) throw new ApiError(422, 'file_name_required', 'every uploaded file needs a file name');
    const format = formatFromName(fileName);
    if (!format) {
      throw new ApiError(
        415,
        'unsupported_file_type',
        `${fileName}: Cadre cannot read this kind of file; it accepts ${acceptedExtensions}`,
      );
    }
    const limit = maxBytesFor(format);
    if (f.truncated || f.size > limit) {
      throw new ApiError(
        413,
        'file_too_large',
        `${fileName} is ${f.truncated ? 'more than ' : ''}${describeSize(f.size)}; ${isImage(format) ? 'images' : 'documents'} can be at most ${describeSize(limit)}`,
        {},
        { file: fileName, limit_bytes: limit },
      );
    }
    files.push({ fileName, format, contentType: f.contentType, content: Buffer.concat(f.chunks) });
  }
  return { fields, files };
}
