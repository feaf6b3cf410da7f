// The email.received event: messages that arrived in the connection's folder since the cursor, `UIDVALIDITY:UID` of
// the last one reported. UIDs only grow within one UIDVALIDITY; when the server changes it (the folder was rebuilt,
// every UID is new) the cursor starts again from now rather than reporting the whole folder as new.
import type { EventBatch } from '../connector';
import { inFolder, type EmailConnection } from './imap';
import { summaryOf } from './messages';

/** At most this many messages per poll: the next poll goes on from the cursor. */
const batchSize = 50;

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
      const message = await summaryOf(client, uid);
      if (!message) continue; // expunged in between
      events.push({
        id: `${validity}:${uid}`,
        occurred_at: message.received_at,
        data: { folder, ...message },
      });
    }
    return { events, cursor: uids.length > 0 ? `${validity}:${uids[uids.length - 1]}` : cursor! };
  });
}
