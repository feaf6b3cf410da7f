// The Slack connector (model/connectors/slack.ts) with @slack/web-api. Slack takes no idempotency key, so a post
// carries its step's key in the message's metadata and a retried step looks for it in the channel before posting
// again; a file share has no metadata, so a retried upload looks for the bot's share of the same file instead.
import { ApplicationFailure } from '@temporalio/common';
import type { WebClient } from '@slack/web-api';
import { slackConnector } from '../../../model/connectors/slack';
import type { ToolContext } from '../../tools/tool-context';
import type { EventBatch } from '../connector';
import { implement } from '../implementation';
import { channelOf, slack, type SlackConnection } from './client';

/** The metadata event a post carries: its step's idempotency key. */
const stepEvent = 'cadre_step';
/** How many of a channel's (or thread's) latest messages a retried write looks through for what it already did. */
const lookBack = 200;

interface SlackMessage {
  ts?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  thread_ts?: string;
  reply_count?: number;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
  files?: { id?: string; name?: string; title?: string; size?: number }[];
}

const messageOf = (m: SlackMessage) => ({
  ts: m.ts,
  user: m.user ?? m.bot_id,
  text: m.text ?? '',
  ...(m.thread_ts && m.thread_ts !== m.ts ? { thread_ts: m.thread_ts } : {}),
  ...(m.reply_count ? { reply_count: m.reply_count } : {}),
  ...(m.files?.length ? { files: m.files.map((f) => ({ id: f.id, name: f.name, title: f.title })) } : {}),
});

/** The latest messages of a channel, or of a thread when `thread` is given, with their metadata. */
async function latestMessages(c: SlackConnection, channel: string, thread?: string): Promise<SlackMessage[]> {
  const page = await slack(c, 'looking for an earlier attempt', (client: WebClient) =>
    thread
      ? client.conversations.replies({ channel, ts: thread, limit: lookBack, include_all_metadata: true })
      : client.conversations.history({ channel, limit: lookBack, include_all_metadata: true }),
  );
  return (page.messages ?? []) as SlackMessage[];
}

async function postMessage(
  input: { channel?: string; text: string; blocks?: Record<string, unknown>[]; thread_ts?: string },
  c: SlackConnection,
  ctx: ToolContext,
) {
  const channel = await channelOf(c, input.channel);
  const key = ctx.idempotencyKey;
  const earlier = (await latestMessages(c, channel, input.thread_ts)).find(
    (m) => m.metadata?.event_type === stepEvent && m.metadata.event_payload?.key === key,
  );
  if (earlier) return { channel, ...messageOf(earlier), already_posted: true };
  const posted = await slack(c, `posting to ${input.channel ?? channel}`, (client) =>
    client.chat.postMessage({
      channel,
      text: input.text,
      ...(input.blocks ? { blocks: input.blocks as never } : {}),
      ...(input.thread_ts ? { thread_ts: input.thread_ts } : {}),
      metadata: { event_type: stepEvent, event_payload: { key } },
    }),
  );
  return { channel: posted.channel ?? channel, ...messageOf((posted.message ?? {}) as SlackMessage), ts: posted.ts };
}

async function uploadFile(
  input: { channel?: string; file_id: string; title?: string; comment?: string; thread_ts?: string },
  c: SlackConnection,
  ctx: ToolContext,
) {
  if (!ctx.readFile) throw ApplicationFailure.nonRetryable('slack.upload_file runs only in an agent run', 'NoRun');
  const file = await ctx.readFile(input.file_id);
  if (!file)
    throw ApplicationFailure.nonRetryable(
      `this run has no file ${input.file_id}: give the file_id a step of this run answered (file.generate)`,
      'NoSuchFile',
    );
  const channel = await channelOf(c, input.channel);
  const me = await slack(c, 'asking Slack who the bot is', (client) => client.auth.test());
  // A share of the same file by this bot among the latest messages is taken for this step's earlier attempt.
  const earlier = (await latestMessages(c, channel, input.thread_ts)).find(
    (m) =>
      (m.user === me.user_id || (me.bot_id && m.bot_id === me.bot_id)) &&
      m.files?.some((f) => f.name === file.name && f.size === file.content.length),
  );
  const shared = earlier?.files?.find((f) => f.name === file.name);
  if (earlier && shared)
    return {
      channel,
      ts: earlier.ts,
      file: { id: shared.id, name: shared.name, title: shared.title },
      already_shared: true,
    };
  const uploaded = await slack(c, `sharing ${file.name} in ${input.channel ?? channel}`, (client) =>
    client.filesUploadV2({
      file: file.content,
      filename: file.name,
      title: input.title ?? file.name,
      ...(input.comment ? { initial_comment: input.comment } : {}),
      ...(input.thread_ts ? { channel_id: channel, thread_ts: input.thread_ts } : { channel_id: channel }),
    }),
  );
  const completed = (
    uploaded.files as { files?: { id?: string; name?: string; title?: string; permalink?: string }[] }[]
  )
    .flatMap((f) => f.files ?? [])
    .at(0);
  return {
    channel,
    file: { id: completed?.id, name: completed?.name, title: completed?.title, permalink: completed?.permalink },
  };
}

async function readChannel(input: { channel?: string; limit: number; oldest?: string }, c: SlackConnection) {
  const channel = await channelOf(c, input.channel);
  const page = await slack(c, `reading ${input.channel ?? channel}`, (client) =>
    client.conversations.history({ channel, limit: input.limit, ...(input.oldest ? { oldest: input.oldest } : {}) }),
  );
  return {
    channel,
    messages: ((page.messages ?? []) as SlackMessage[]).map(messageOf),
    has_more: page.has_more ?? false,
  };
}

async function listChannels(c: SlackConnection, limit: number) {
  const channels: { id: string; name: string; is_private: boolean; is_member: boolean }[] = [];
  let cursor: string | undefined;
  do {
    const page = await slack(c, 'listing channels', (client) =>
      client.conversations.list({
        types: 'public_channel,private_channel',
        exclude_archived: true,
        limit: Math.min(200, limit - channels.length),
        cursor,
      }),
    );
    for (const ch of page.channels ?? [])
      channels.push({ id: ch.id!, name: ch.name!, is_private: !!ch.is_private, is_member: !!ch.is_member });
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor && channels.length < limit);
  return { channels };
}

/** Most pages of new messages one poll reads (200 each); more than that since the last poll are not all reported. */
const pollPages = 10;

/**
 * The default channel's top-level messages after the cursor (the latest ts seen), oldest first. Slack pages history
 * newest first, so a poll reads all its pages before answering.
 */
async function pollMessages(c: SlackConnection, cursor: string | undefined): Promise<EventBatch> {
  if (!c.config.default_channel)
    throw ApplicationFailure.nonRetryable(
      `connection "${c.name}" has no default channel: the message.posted event watches it, so set one`,
      'SlackSettings',
    );
  const channel = await channelOf(c, undefined);
  if (cursor === undefined) {
    const latest = await slack(c, 'reading the channel', (client) =>
      client.conversations.history({ channel, limit: 1 }),
    );
    return { events: [], cursor: latest.messages?.[0]?.ts ?? '0' };
  }
  const fresh: SlackMessage[] = [];
  let page: string | undefined;
  for (let i = 0; i < pollPages; i++) {
    const answer = await slack(c, 'reading new messages', (client) =>
      client.conversations.history({ channel, oldest: cursor, limit: 200, cursor: page }),
    );
    fresh.push(...((answer.messages ?? []) as SlackMessage[]));
    page = answer.response_metadata?.next_cursor || undefined;
    if (!answer.has_more || !page) break;
  }
  // Slack's ts are fixed-point decimals: compared as numbers of microseconds, not as floats.
  const micros = (ts: string) => BigInt(ts.replace('.', '').padEnd(ts.indexOf('.') + 6, '0'));
  const ordered = fresh.filter((m) => m.ts).sort((a, b) => (micros(a.ts!) < micros(b.ts!) ? -1 : 1));
  return {
    events: ordered.map((m) => ({
      id: `${channel}:${m.ts}`,
      occurred_at: new Date(Number(m.ts!.split('.')[0]) * 1000).toISOString(),
      data: { channel, ...messageOf(m) },
    })),
    cursor: ordered.at(-1)?.ts ?? cursor,
  };
}

export const slackImplementation = implement(slackConnector, {
  async check(c) {
    const me = await slack(c, 'signing in to Slack', (client) => client.auth.test());
    const found: string[] = [];
    if (c.config.default_channel) {
      const channel = await channelOf(c, undefined);
      const info = await slack(c, `reading ${c.config.default_channel}`, (client) =>
        client.conversations.info({ channel }),
      );
      found.push(`#${info.channel?.name ?? c.config.default_channel} (${channel})`);
    }
    return { server_version: `Slack workspace ${me.team ?? me.team_id} as ${me.user ?? me.user_id}`, found };
  },
  handlers: {
    'slack.post_message': (input, c, ctx) => postMessage(input, c, ctx),
    'slack.update_message': async (input, c) => {
      const channel = await channelOf(c, input.channel);
      const updated = await slack(c, `changing message ${input.ts}`, (client) =>
        client.chat.update({ channel, ts: input.ts, text: input.text }),
      );
      return { channel: updated.channel ?? channel, ts: updated.ts ?? input.ts, text: updated.text ?? input.text };
    },
    'slack.upload_file': (input, c, ctx) => uploadFile(input, c, ctx),
    'slack.read_channel': (input, c) => readChannel(input, c),
    'slack.list_channels': (input, c) => listChannels(c, input.limit),
  },
  pollers: { 'message.posted': pollMessages },
});
