// The email connector (model/connectors/email.ts): a mailbox over IMAP with imapflow, mail sent over SMTP with
// nodemailer. Writes to the mailbox (move, flag) are safe to repeat; sending is made so (./send.ts).
import { ApplicationFailure } from '@temporalio/common';
import type { ImapFlow, SearchObject } from 'imapflow';
import type { z } from 'zod';
import { emailConnector } from '../../../model/connectors/email';
import { implement } from '../implementation';
import { folderPaths, imapFailure, inFolder, login, type EmailConnection } from './imap';
import { attachmentsOf, downloadPart, missing, readMessage, summaryOf } from './messages';
import { pollReceived } from './received';
import { sendAsMailbox, verifySmtp } from './send';

/** A saved attachment may be at most this big: run files live in the database. */
const maxAttachmentBytes = 25 * 1024 * 1024;

const folderOf = (c: EmailConnection, folder: string | undefined) => folder ?? c.config.folder;

type SearchInput = z.infer<(typeof emailConnector)['tools']['email.search']['input']>;

function criteria(input: SearchInput): SearchObject {
  const q: SearchObject = {};
  if (input.from) q.from = input.from;
  if (input.to) q.to = input.to;
  if (input.subject) q.subject = input.subject;
  if (input.text) q.text = input.text;
  if (input.since) q.since = input.since.slice(0, 10);
  if (input.before) q.before = input.before.slice(0, 10);
  if (input.unseen !== undefined) q.seen = !input.unseen;
  if (input.flagged !== undefined) q.flagged = input.flagged;
  return Object.keys(q).length > 0 ? q : { all: true };
}

export const emailImplementation = implement(emailConnector, {
  async check(c) {
    let client: ImapFlow | undefined;
    try {
      client = await login(c);
      const folders = await folderPaths(client);
      if (!folders.includes(c.config.folder))
        throw ApplicationFailure.nonRetryable(
          `the mailbox has no folder "${c.config.folder}" (it has ${folders.join(', ')})`,
          'EmailRefused',
        );
      const server = client.serverInfo;
      if (c.config.smtp) await verifySmtp(c);
      return {
        server_version: server?.name ? `${server.name} ${server.version ?? ''}`.trim() : 'IMAP server',
        found: folders,
      };
    } catch (err) {
      throw imapFailure(c.config, err);
    } finally {
      await client?.logout().catch(() => client?.close());
    }
  },
  handlers: {
    'email.search': (input, c) => {
      const folder = folderOf(c, input.folder);
      return inFolder(c, folder, async (client) => {
        const uids = ((await client.search(criteria(input), { uid: true })) || []).sort((a, b) => b - a);
        const messages = [];
        for (const uid of uids.slice(0, input.limit)) {
          const message = await summaryOf(client, uid);
          if (message) messages.push(message);
        }
        return { folder, total: uids.length, messages };
      });
    },
    'email.read': (input, c) => {
      const folder = folderOf(c, input.folder);
      return inFolder(c, folder, (client) => readMessage(client, folder, input.uid));
    },
    'email.download_attachments': (input, c, ctx) => {
      const folder = folderOf(c, input.folder);
      if (!ctx.saveFile)
        throw ApplicationFailure.nonRetryable('email.download_attachments needs a run to save into', 'NoRun');
      const save = ctx.saveFile;
      return inFolder(c, folder, async (client) => {
        const files = [];
        for (const a of await attachmentsOf(client, folder, input.uid, input.names)) {
          const content = await downloadPart(client, input.uid, a.part, {
            maxBytes: maxAttachmentBytes + 1,
            asText: false,
          });
          if (content.length > maxAttachmentBytes)
            throw ApplicationFailure.nonRetryable(
              `"${a.name}" of message ${input.uid} is larger than ${maxAttachmentBytes / 1024 / 1024} MB, the most a ` +
                'run file may be',
              'EmailAttachmentTooLarge',
            );
          // Each attachment is its own file of the call (`part`), stored once however often a retry saves it.
          files.push(await save({ name: a.name, contentType: a.content_type, content, part: a.part }));
        }
        return { uid: input.uid, folder, files };
      });
    },
    'email.move': (input, c) => {
      const folder = folderOf(c, input.folder);
      return inFolder(c, folder, async (client) => {
        // A MOVE of a UID that is not there succeeds with nothing moved: ask first.
        if (!(await client.fetchOne(String(input.uid), { uid: true }, { uid: true }))) throw missing(folder, input.uid);
        const moved = await client.messageMove(String(input.uid), input.to, { uid: true });
        if (!moved) throw missing(folder, input.uid);
        return { uid: input.uid, from: folder, to: input.to, new_uid: moved.uidMap?.get(input.uid) ?? null };
      });
    },
    'email.flag': (input, c) => {
      const folder = folderOf(c, input.folder);
      return inFolder(c, folder, async (client) => {
        const range = String(input.uid);
        if (input.add.length > 0) await client.messageFlagsAdd(range, input.add, { uid: true });
        if (input.remove.length > 0) await client.messageFlagsRemove(range, input.remove, { uid: true });
        const msg = await client.fetchOne(range, { uid: true, flags: true }, { uid: true });
        if (!msg) throw missing(folder, input.uid);
        return { uid: input.uid, folder, flags: [...(msg.flags ?? [])] };
      });
    },
    'email.send': (input, c, ctx) => sendAsMailbox(input, c, ctx),
  },
  pollers: { 'email.received': pollReceived },
});
