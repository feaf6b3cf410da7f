// A mailbox: read and search it over IMAP, move and flag its messages, save attachments as run files, and send as
// its address over SMTP (a mailbox without SMTP settings only reads). `email.send` is also the deployment's own
// mail tool: without a connection it sends through the operator's SMTP server (SMTP_URL), as it always did.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('an email');
const host = z.string().min(1).max(253);
const port = z.number().int().min(1).max(65535);

export const emailConfigSchema = z.object({
  imap: z
    .object({
      host: host.describe('the IMAP server, e.g. imap.example.com'),
      port: port.optional().describe('993 with TLS, 143 without, when left empty'),
      secure: z
        .boolean()
        .default(true)
        .describe('TLS from the first byte (port 993); when off, the connection must upgrade with STARTTLS'),
      user: z.string().min(1).max(320).describe('the login, usually the mailbox address'),
    })
    .describe('where the mailbox is read'),
  smtp: z
    .object({
      host: host.describe('the SMTP server, e.g. smtp.example.com'),
      port: port.optional().describe('465 with TLS, 587 without, when left empty'),
      secure: z
        .boolean()
        .default(true)
        .describe('TLS from the first byte (port 465); when off, the connection must upgrade with STARTTLS'),
      user: z.string().min(1).max(320).optional().describe('the login, when it is not the IMAP login'),
    })
    .optional()
    .describe('where mail is sent; leave it out for a mailbox agents only read'),
  from: z
    .string()
    .min(3)
    .max(320)
    .optional()
    .describe('the address mail is sent as, e.g. "Accounts <ap@example.com>"; the IMAP login when left empty'),
  folder: z.string().min(1).max(500).default('INBOX').describe('the folder tools read and watch unless told another'),
  sent_folder: z
    .string()
    .min(1)
    .max(500)
    .optional()
    .describe(
      'the folder sent mail is kept in, looked up before sending so a retried send is not sent twice; the folder ' +
        'the server marks as Sent when left empty',
    ),
  save_sent: z
    .boolean()
    .default(false)
    .describe('keep a copy of each message sent in the sent folder (turn on when the SMTP server does not itself)'),
});
export type EmailConfig = z.infer<typeof emailConfigSchema>;

export const emailCredentialsSchema = z.object({
  password: z.string().min(1).max(1000).describe('the IMAP password (an app password where the provider has them)'),
  smtp_password: z.string().min(1).max(1000).optional().describe('the SMTP password, when not the same'),
});

const folder = z.string().min(1).max(500).optional().describe("the folder; the connection's folder when left out");
const uid = z.coerce.number().int().min(1).describe('the message, by its UID in the folder (from email.search)');
const flag = z
  .string()
  .regex(/^\\?[\w$.-]{1,100}$/, 'a flag such as \\Seen, \\Flagged or a keyword')
  .describe('\\Seen, \\Flagged, \\Answered, \\Deleted, \\Draft or a keyword');
const addresses = z.union([z.string().min(3).max(5000), z.array(z.string().min(3).max(320)).min(1).max(100)]);
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}/, 'a date such as 2024-05-31')
  .describe('a date, YYYY-MM-DD');

export const emailConnector = defineConnector({
  kind: 'email',
  label: 'Email (IMAP and SMTP)',
  category: 'email',
  description: 'Search and read a mailbox, file its messages, save attachments and send mail as its address.',
  config: emailConfigSchema,
  credentials: emailCredentialsSchema,
  tools: {
    'email.search': {
      name: 'email.search',
      description:
        'Search a folder of the mailbox, newest first; every criterion given must match. Answers each message’s ' +
        'uid, subject, from, to, date, flags, the start of its text and its attachments’ names.',
      input: z.object({
        connection,
        folder,
        from: z.string().min(1).max(320).optional(),
        to: z.string().min(1).max(320).optional(),
        subject: z.string().min(1).max(500).optional(),
        text: z.string().min(1).max(500).optional().describe('words anywhere in the headers or the body'),
        since: date.optional().describe('received on or after this date (YYYY-MM-DD)'),
        before: date.optional().describe('received before this date (YYYY-MM-DD)'),
        unseen: z.boolean().optional().describe('true: only unread messages; false: only read ones'),
        flagged: z.boolean().optional().describe('true: only flagged messages; false: only unflagged ones'),
        limit: z.coerce.number().int().min(1).max(200).default(20),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'email.read': {
      name: 'email.read',
      description:
        'Read one message: its headers, its text (an HTML-only message as text) and its attachments with their ' +
        'part ids and sizes.',
      input: z.object({ connection, folder, uid }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'email.download_attachments': {
      name: 'email.download_attachments',
      description:
        'Save the attachments of a message as files of the run (all of them, or those named); answers the files.',
      input: z.object({
        connection,
        folder,
        uid,
        names: z.array(z.string().min(1).max(500)).min(1).max(100).optional().describe('file names to save'),
      }),
      sideEffect: 'files',
      approvalDefault: 'never',
    },
    'email.move': {
      name: 'email.move',
      description: 'Move a message to another folder of the mailbox.',
      input: z.object({ connection, folder, uid, to: z.string().min(1).max(500).describe('the folder to move it to') }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'email.flag': {
      name: 'email.flag',
      description: 'Add flags to a message and take others away (\\Seen marks it read, \\Flagged stars it).',
      input: z
        .object({
          connection,
          folder,
          uid,
          add: z.array(flag).max(20).default([]),
          remove: z.array(flag).max(20).default([]),
        })
        .refine((i) => i.add.length + i.remove.length > 0, 'give flags to add or to remove'),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'email.send': {
      name: 'email.send',
      description:
        'Send an email as the connection’s address over its SMTP server, or, without a connection, from the ' +
        'deployment’s own SMTP server. in_reply_to (a message_id from email.read) makes it a reply in that thread.',
      input: z.object({
        connection: connection
          .optional()
          .describe('the email connection to send as; the deployment’s own SMTP server when left out'),
        to: addresses,
        cc: addresses.optional(),
        subject: z.string().min(1).max(1000),
        text: z.string().max(1_000_000).default(''),
        html: z.string().max(5_000_000).optional(),
        in_reply_to: z.string().min(3).max(1000).optional(),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
      // Mail from the operator's own server (notices to the team) went out without asking before connections
      // existed; sending as a connected mailbox asks a reviewer until the editor's policy says otherwise.
      approvalFor: (args) => ((args as { connection?: unknown }).connection === undefined ? 'never' : 'always'),
    },
  },
  events: {
    'email.received': {
      description: 'A new message arrived in the connection’s folder.',
      options: z
        .object({
          inbox: z
            .boolean()
            .default(false)
            .describe(
              "keep each message as a thread of the agent's Inbox, where email.reply answers it from this mailbox",
            ),
        })
        .default({ inbox: false }),
    },
  },
  where: (config) => `${config.imap.host} as ${config.imap.user}`,
  toolsFor: (config) => [
    'email.search',
    'email.read',
    'email.download_attachments',
    'email.move',
    'email.flag',
    ...(config.smtp ? (['email.send'] as const) : []),
  ],
});
