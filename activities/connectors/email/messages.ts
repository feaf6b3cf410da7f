// Messages as agents get them: what a search answers about each, a message read in full (its text, an HTML-only one
// as text) and its attachments. The parts come from the server's BODYSTRUCTURE and only the parts needed are
// downloaded, so reading a message never pulls its attachments and listing them never pulls their bytes.
import type { ImapFlow, MessageAddressObject, MessageStructureObject } from 'imapflow';
import { refused } from './imap';
import { machineSent } from '../../../model/inbox';

export interface MessagePart {
  /** The IMAP part id, `2` or `1.2`, that downloads it. */
  part: string;
  name: string;
  content_type: string;
  /** Decoded bytes, estimated from the encoded size the server reports. */
  size: number;
}

interface Parts {
  text?: MessagePart;
  html?: MessagePart;
  attachments: MessagePart[];
}

/** A base64 line of 78 octets (76 and CRLF) carries 57 bytes. */
const decodedSize = (node: MessageStructureObject) =>
  node.encoding?.toLowerCase() === 'base64' ? Math.floor(((node.size ?? 0) * 57) / 78) : (node.size ?? 0);

const extensions: Record<string, string> = {
  'application/pdf': 'pdf',
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'text/plain': 'txt',
  'text/html': 'html',
  'text/csv': 'csv',
  'message/rfc822': 'eml',
};

function partOf(node: MessageStructureObject, asAttachment: boolean): MessagePart {
  const part = node.part ?? '1'; // a message of one part: its body is part 1
  const given = node.dispositionParameters?.filename ?? node.parameters?.name;
  const name = given ?? (asAttachment ? `part-${part}.${extensions[node.type] ?? 'bin'}` : '');
  return { part, name, content_type: node.type, size: decodedSize(node) };
}

/** Walks a BODYSTRUCTURE: the first plain and HTML text of the message body, and everything else as attachments. */
export function partsOf(structure: MessageStructureObject | undefined): Parts {
  const found: Parts = { attachments: [] };
  const walk = (node: MessageStructureObject) => {
    if (node.childNodes?.length) return node.childNodes.forEach(walk);
    const attached =
      node.disposition?.toLowerCase() === 'attachment' ||
      (node.dispositionParameters?.filename ?? node.parameters?.name) !== undefined;
    if (!attached && node.type === 'text/plain' && !found.text) found.text = partOf(node, false);
    else if (!attached && node.type === 'text/html' && !found.html) found.html = partOf(node, false);
    else found.attachments.push(partOf(node, true));
  };
  if (structure) walk(structure);
  return found;
}

export const addressText = (a: MessageAddressObject) => (a.name ? `${a.name} <${a.address ?? ''}>` : (a.address ?? ''));
const addressList = (list?: MessageAddressObject[]) => (list ?? []).map(addressText);

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/**
 * A part's bytes, decoded from its transfer encoding; text read for an agent also from its charset to UTF-8, a file
 * kept as it was sent. At most `maxBytes`.
 */
export async function downloadPart(
  client: ImapFlow,
  uid: number,
  part: string,
  opts: { maxBytes?: number; asText: boolean },
): Promise<Buffer> {
  const { content } = await client.download(String(uid), part, {
    uid: true,
    maxBytes: opts.maxBytes,
    decodeText: opts.asText,
  });
  if (!content) throw refused(`part ${part} of message ${uid} is not there any more`);
  return readAll(content);
}

/** HTML as readable text, by mailparser (which turns an HTML-only message into text the same way). */
async function htmlText(html: string): Promise<string> {
  const { simpleParser } = await import('mailparser'); // loaded on first use
  const parsed = await simpleParser(Buffer.from(`Content-Type: text/html; charset=utf-8\r\n\r\n${html}`));
  return parsed.text ?? '';
}

/** The message's text: its plain part, else its HTML part as text; at most `maxBytes` of the part are read. */
export async function bodyText(client: ImapFlow, uid: number, parts: Parts, maxBytes: number) {
  const source = parts.text ?? parts.html;
  if (!source) return { text: '', truncated: false };
  const bytes = await downloadPart(client, uid, source.part, { maxBytes, asText: true });
  const raw = bytes.toString('utf8');
  const text = source === parts.text ? raw : await htmlText(raw);
  return { text: text.replace(/\r\n/g, '\n'), truncated: bytes.length >= maxBytes };
}

const snippetOf = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
};

/** What a search or an event tells of a message: enough to choose which to read. */
export async function summaryOf(client: ImapFlow, uid: number) {
  const msg = await client.fetchOne(
    String(uid),
    { uid: true, envelope: true, flags: true, bodyStructure: true, internalDate: true },
    { uid: true },
  );
  if (!msg) return undefined;
  const parts = partsOf(msg.bodyStructure);
  const { text } = await bodyText(client, uid, parts, 4096);
  const env = msg.envelope ?? {};
  return {
    uid,
    message_id: env.messageId ?? null,
    subject: env.subject ?? '',
    from: addressList(env.from)[0] ?? '',
    to: addressList(env.to),
    date: new Date(env.date ?? msg.internalDate ?? 0).toISOString(),
    received_at: new Date(msg.internalDate ?? 0).toISOString(),
    flags: [...(msg.flags ?? [])],
    snippet: snippetOf(text),
    attachments: parts.attachments.map((a) => a.name),
  };
}

/** A message in full: its headers, text and the attachments download_attachments can save. */
export async function readMessage(client: ImapFlow, folder: string, uid: number) {
  const msg = await client.fetchOne(
    String(uid),
    {
      uid: true,
      envelope: true,
      flags: true,
      bodyStructure: true,
      internalDate: true,
      headers: ['references', 'auto-submitted', 'precedence'],
    },
    { uid: true },
  );
  if (!msg) throw missing(folder, uid);
  const parts = partsOf(msg.bodyStructure);
  const { text, truncated } = await bodyText(client, uid, parts, 1_000_000);
  const env = msg.envelope ?? {};
  const headers = (msg.headers?.toString('utf8') ?? '').replace(/\r?\n[ \t]+/g, ' ');
  const header = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(headers)?.[1] ?? null;
  const references = header('references');
  return {
    uid,
    folder,
    message_id: env.messageId ?? null,
    in_reply_to: env.inReplyTo ?? null,
    references: references ? references.replace(/\s+/g, ' ').trim().split(' ') : [],
    subject: env.subject ?? '',
    from: addressList(env.from)[0] ?? '',
    reply_to: addressList(env.replyTo)[0] ?? addressList(env.from)[0] ?? '',
    to: addressList(env.to),
    cc: addressList(env.cc),
    date: new Date(env.date ?? msg.internalDate ?? 0).toISOString(),
    received_at: new Date(msg.internalDate ?? 0).toISOString(),
    flags: [...(msg.flags ?? [])],
    text,
    text_truncated: truncated,
    // Set when a machine sent it (Auto-Submitted, Precedence: bulk): an Inbox reply does not answer it.
    auto_submitted: machineSent(header('auto-submitted'), header('precedence')),
    has_html: parts.html !== undefined,
    attachments: parts.attachments,
  };
}

export const missing = (folder: string, uid: number) =>
  refused(`there is no message ${uid} in "${folder}" (moved or deleted since it was found?)`, 'EmailNotFound');

/** The message's attachments, all or those `names` name (every name must be one of them). */
export async function attachmentsOf(client: ImapFlow, folder: string, uid: number, names?: string[]) {
  const msg = await client.fetchOne(String(uid), { uid: true, bodyStructure: true }, { uid: true });
  if (!msg) throw missing(folder, uid);
  const { attachments } = partsOf(msg.bodyStructure);
  if (!names) return attachments;
  const unknown = names.filter((n) => !attachments.some((a) => a.name === n));
  if (unknown.length > 0)
    throw refused(
      `message ${uid} has no attachment ${unknown.map((n) => `"${n}"`).join(', ')} ` +
        `(it has ${attachments.map((a) => `"${a.name}"`).join(', ') || 'none'})`,
    );
  return attachments.filter((a) => names.includes(a.name));
}
