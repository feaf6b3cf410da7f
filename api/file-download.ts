// Files of runs (a run's output files, an email's attachments, what a tool wrote) as downloads. Their names and
// content types come from tenants and from whoever mails an agent, so a file must never run as a page of Cadre's
// origin: every download is an attachment, is not sniffed into another type, and if a browser renders it anyway
// (an HTML or SVG file opened from the downloads list) it runs no script, loads nothing and has an origin of its
// own. Every route that serves a file's bytes, in the API and in the console's proxies, sets these headers.
import type { Response } from 'express';

/** Nothing loads, nothing runs, and the document is put in a unique origin (sandbox without allow-*). */
export const DOWNLOAD_CSP = "default-src 'none'; sandbox";

/** The headers every download carries, whatever serves it. */
export const downloadHeaders: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': DOWNLOAD_CSP,
};

/** Sends a stored file as a download: `Content-Disposition: attachment` with its name, and downloadHeaders. */
export function sendDownload(res: Response, file: { name: string; content_type: string; content: Buffer }): void {
  res.set(downloadHeaders);
  res.attachment(file.name).type(file.content_type).send(file.content);
}
