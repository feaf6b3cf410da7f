// Team chat in Slack: post, update and read messages and share a run's files in channels, as a bot. The bot acts
// with a bot token (xoxb-…) given here, or through an OAuth 2.0 account of the workspace (an oauth2 connection whose
// access token Slack accepts), never both: which one acts must be plain to whoever reads the connection.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('a Slack');
const channel = z
  .string()
  .min(1)
  .max(200)
  .describe("a channel ID (C0123ABCD) or name (#sales); the connection's default channel when left out");
/** Slack's message timestamps are its message ids: "1700000000.000100". */
const ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/, 'a Slack message timestamp such as 1700000000.000100');

export const slackConfigSchema = z.object({
  account: z
    .string()
    .min(1)
    .max(60)
    .optional()
    .describe(
      'the OAuth 2.0 connection of this workspace whose access token the bot acts with (leave empty to give a bot token instead)',
    ),
  api_url: z
    .url({ protocol: /^https?$/ })
    .max(500)
    .default('https://slack.com/api/')
    .describe("Slack's Web API address; change it only for a Slack-compatible server"),
  default_channel: channel
    .optional()
    .describe(
      'the channel tools use when a call names none, and whose new messages the "message.posted" event reports',
    ),
});
export type SlackConfig = z.infer<typeof slackConfigSchema>;

export const slackCredentialsSchema = z
  .object({
    bot_token: z
      .string()
      .regex(/^xox[bpe]-[\w-]+$/, 'a Slack token starts with xoxb- (a bot token)')
      .max(500)
      .optional()
      .describe("the bot's token (xoxb-…) from the Slack app's OAuth & Permissions page, when no account is named"),
  })
  .default({});
export type SlackCredentials = z.infer<typeof slackCredentialsSchema>;

export const slackConnector = defineConnector({
  kind: 'slack',
  label: 'Slack',
  category: 'chat',
  description: 'Post, update and read messages and share files in Slack channels as a bot.',
  config: slackConfigSchema,
  credentials: slackCredentialsSchema,
  tools: {
    'slack.post_message': {
      name: 'slack.post_message',
      description:
        'Post a message to a Slack channel (or as a reply in a thread) and answer its channel and ts; a retried ' +
        'step finds the message it already posted instead of posting twice.',
      input: z.object({
        connection,
        channel: channel.optional(),
        text: z.string().min(1).max(40_000).describe('the message, in Slack mrkdwn; also the notification text'),
        blocks: z
          .array(z.record(z.string(), z.unknown()))
          .max(50)
          .optional()
          .describe('Block Kit blocks laid out instead of the text'),
        thread_ts: ts.optional().describe('the ts of the message to reply to in its thread'),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'slack.update_message': {
      name: 'slack.update_message',
      description: 'Replace the text of a message the bot posted, found by its channel and ts.',
      input: z.object({
        connection,
        channel,
        ts: ts.describe('the ts of the message to change'),
        text: z.string().min(1).max(40_000),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'slack.upload_file': {
      name: 'slack.upload_file',
      description: 'Share a file of the run (one a step wrote, by its file_id) in a Slack channel, with a comment.',
      input: z.object({
        connection,
        channel: channel.optional(),
        file_id: z.uuid().describe('the file_id a step of this run answered (file.generate)'),
        title: z.string().min(1).max(250).optional().describe("the file's title in Slack; its name when left out"),
        comment: z.string().max(40_000).optional().describe('a message posted with the file'),
        thread_ts: ts.optional().describe('the ts of the message whose thread the file goes in'),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'slack.read_channel': {
      name: 'slack.read_channel',
      description:
        "Read a Slack channel's recent messages, newest first: each with its user, text and ts (oldest: only " +
        'messages after that ts).',
      input: z.object({
        connection,
        channel: channel.optional(),
        limit: z.number().int().min(1).max(200).default(20),
        oldest: ts.optional().describe('only messages posted after this ts'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'slack.list_channels': {
      name: 'slack.list_channels',
      description: 'List the Slack channels the bot can see, with their ids and whether it is a member.',
      input: z.object({ connection, limit: z.number().int().min(1).max(1000).default(200) }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
  },
  events: {
    'message.posted': {
      description: "A message was posted in the connection's default channel (thread replies are not reported).",
    },
  },
  where: (config) =>
    `${new URL(config.api_url).host}${config.default_channel ? ` ${config.default_channel}` : ''}` +
    (config.account ? ` as account "${config.account}"` : ''),
  account: (config) => config.account,
  tokenDestination: (config) => config.api_url,
});
