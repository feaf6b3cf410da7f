// The email.received event: messages that arrived in the connection's folder since the cursor, `UIDVALIDITY:UID` of
// the last one reported. UIDs only grow within one UIDVALIDITY; when the server changes it (the folder was rebuilt,
// every UID is new) the cursor starts again from now rather than reporting the whole folder as new.
import { ApplicationFailure } from '@temporalio/common';
import type { ImapFlow } from 'imapflow';
import type { EventBatch } from '../connector';
import { inFolder, type EmailConnection } from './imap';
import { attachmentsOf, downloadPart, readMessage } from './messages';

/** At most this many messages per poll: the next poll goes on from the cursor. */
const batchSize = 50;
/** Attachments larger than this stay in the mailbox (email.download_attachments says why when asked for them). */
const maxFileBytes = 25 * 1024 * 1024;

/** A message's attachments, as the files its run gets; an oversized one is left out and named in `skipped`. */
async function filesOf(client: ImapFlow, folder: string, uid: number) {
  const files: NonNullable<EventBatch['events'][number]['files']> = [];
  const skipped: string[] = [];
  for (const a of await attachmentsOf(client, folder, uid)) {
    const content = await downloadPart(client, uid, a.part, { maxBytes: maxFileBytes + 1, asText: false });
    if (content.length > maxFileBytes) skipped.push(a.name);
    else files.push({ name: a.name, contentType: a.content_type, content });
  }
  return { files, skipped };
}

/**
 * The message as its run's item: its headers, its text (an HTML-only message as text), the attachments' names and
 * their types (so a trigger's conditions can ask for PDFs only, say); undefined when it was expunged in between.
 */
async function receivedMessage(client: ImapFlow, folder: string, uid: number) {
  try {
    const { attachments, has_html: _html, ...message } = await readMessage(client, folder, uid);
    return {
      ...message,
      attachments: attachments.map((a) => a.name),
      attachment_types: [...new Set(attachments.map((a) => a.content_type))],
    };
  } catch (err) {
    if (err instanceof ApplicationFailure && err.type === 'EmailNotFound') return undefined;
    throw err;
  }
}

const parseCursor = (cursor: string | undefined) => {
  const m = /^(\d+):(\d+)$/.exec(cursor ?? '');
  return m ? { validity: m[1], last: Number(m[2]) } : undefined;
};

export async function pollReceived(c: EmailConnection, cursor: string | undefined): Promise<EventBatch> {
  const folder = c.config.folder;
  return inFolder(c, folder, async (client) => {
    const box = client.mailbox;
    if (!box) throw new Error(`"${folder}" could not be opened`);
    const validity = String(box.uidValidity);
    const newest = box.exists > 0 ? await client.fetchOne('*', { uid: true }) : false;
    const now = `${validity}:${newest ? newest.uid : 0}`;
    const from = parseCursor(cursor);
    if (!from || from.validity !== validity) return { events: [], cursor: now };

    const uids = ((await client.search({ uid: `${from.last + 1}:*` }, { uid: true })) || [])
      // `n:*` always matches the newest message, even when it is older than n
      .filter((uid) => uid > from.last)
      .sort((a, b) => a - b)
      .slice(0, batchSize);
    const events: EventBatch['events'] = [];
    for (const uid of uids) {
      const message = await receivedMessage(client, folder, uid);
      if (!message) continue; // expunged in between
      const { files, skipped } = await filesOf(client, folder, uid);
      events.push({
        id: `${validity}:${uid}`,
        occurred_at: message.received_at,
        data: { ...message, ...(skipped.length > 0 ? { attachments_too_large: skipped } : {}) },
        files,
        cursor: `${validity}:${uid}`,
      });
    }
    return { events, cursor: uids.length > 0 ? `${validity}:${uids[uids.length - 1]}` : cursor! };
  });
}
