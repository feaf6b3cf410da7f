// A stateful Slack Web API for tests, over real HTTP in Slack's wire format: methods POSTed to /api/<method> with a
// form-encoded (or JSON) body and the token in `Authorization: Bearer`, answers `{ok: true, ...}` or
// `{ok: false, error}` with HTTP 200, 429 with Retry-After seconds when rate limited, channels with members, messages
// with metadata and threads, cursor paging, and the external file upload (files.getUploadURLExternal, the upload
// URL, files.completeUploadExternal). Strict where Slack is: unknown tokens, channels and messages are refused with
// Slack's error codes. Tests drive it only through @slack/web-api and read its state directly.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseQuery } from 'node:querystring';

export interface SlackChannel {
  id: string;
  name: string;
  is_private: boolean;
  is_member: boolean;
}

export interface SlackFile {
  id: string;
  name: string;
  title: string;
  size: number;
  mimetype: string;
  content?: Buffer;
  permalink: string;
}

export interface StoredMessage {
  type: 'message';
  ts: string;
  user: string;
  bot_id?: string;
  text: string;
  thread_ts?: string;
  reply_count?: number;
  blocks?: unknown[];
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  files?: Omit<SlackFile, 'content'>[];
  edited?: { user: string; ts: string };
}

export interface SlackCall {
  method: string;
  params: Record<string, unknown>;
}

export interface FakeSlack {
  /** Where the Web API is: give `${url}/api/` as the client's slackApiUrl. */
  url: string;
  /** Every method call that passed authentication, in order (tokens left out). */
  calls: SlackCall[];
  /** The methods answered 429, in order. */
  rateLimited: string[];
  /** A bot token the workspace's app was given. */
  addBotToken(token: string): void;
  addChannel(name: string, opts?: { private?: boolean; member?: boolean }): SlackChannel;
  channel(name: string): SlackChannel;
  /** The channel's messages, oldest first, with their thread replies. */
  messages(channelName: string): StoredMessage[];
  /** A person posts in the channel (what the bot reads and the event reports). */
  postAsPerson(channelName: string, text: string, user?: string): StoredMessage;
  /** The next `times` calls of `method` are answered 429 with Retry-After `seconds`. */
  rateLimit(method: string, seconds: number, times?: number): void;
  /** The next call of `method` is carried out, but its answer is lost (the connection drops). */
  loseAnswer(method: string): void;
  close(): Promise<void>;
}

const bot = { user_id: 'U0CADREBOT', bot_id: 'B0CADREBOT', user: 'cadre-bot' };
const team = { id: 'T0CADRE', name: 'Cadre Test', domain: 'cadre-test' };

/**
 * Starts the fake on a free loopback port. `authorize` may accept further tokens (an OAuth 2.0 provider's access
 * tokens, checked by introspection); bot tokens given with addBotToken are accepted as they are.
 */
export async function startFakeSlack(
  opts: { authorize?: (token: string) => Promise<boolean> } = {},
): Promise<FakeSlack> {
  const tokens = new Set<string>();
  const channels: SlackChannel[] = [];
  const history = new Map<string, StoredMessage[]>();
  const files = new Map<string, SlackFile>();
  const calls: SlackCall[] = [];
  const rateLimited: string[] = [];
  const limits = new Map<string, { seconds: number; times: number }>();
  const losing = new Set<string>();
  let lastMicros = 0n;
  let ids = 0;

  const newId = (prefix: string) => `${prefix}0${(++ids).toString(36).toUpperCase().padStart(8, '0')}`;
  /** Slack's ts: seconds and microseconds, unique and increasing in a channel. */
  const newTs = () => {
    const now = BigInt(Date.now()) * 1000n;
    lastMicros = now > lastMicros ? now : lastMicros + 1n;
    const text = lastMicros.toString();
    return `${text.slice(0, -6)}.${text.slice(-6)}`;
  };
  const micros = (ts: string) => BigInt(ts.replace('.', '').padEnd(ts.indexOf('.') + 6, '0'));

  const byName = (name: string) => channels.find((c) => c.name === name.replace(/^#/, ''));
  const findChannel = (given: unknown) =>
    typeof given === 'string' ? (channels.find((c) => c.id === given) ?? byName(given)) : undefined;
  /** What a bot can see: public channels and private ones it is in. */
  const visible = (c: SlackChannel | undefined) => (c && (!c.is_private || c.is_member) ? c : undefined);

  const server = http.createServer();
  let base = '';

  const fail = (error: string, extra: Record<string, unknown> = {}) => ({ ok: false, error, ...extra });
  const page = <T>(all: T[], params: Record<string, unknown>, max = 1000) => {
    const limit = Math.min(max, Math.max(1, Number(params.limit ?? 100) || 100));
    const offset = params.cursor ? Number(Buffer.from(String(params.cursor), 'base64').toString().split(':')[1]) : 0;
    const slice = all.slice(offset, offset + limit);
    const more = offset + limit < all.length;
    return {
      slice,
      has_more: more,
      response_metadata: { next_cursor: more ? Buffer.from(`offset:${offset + limit}`).toString('base64') : '' },
    };
  };
  const shown = (m: StoredMessage, withMetadata: boolean) => {
    const { metadata, ...rest } = m;
    return withMetadata && metadata ? { ...rest, metadata } : rest;
  };
  const truthy = (v: unknown) => v === true || v === 'true' || v === '1' || v === 1;

  const methods: Record<string, (p: Record<string, unknown>) => Record<string, unknown>> = {
    'auth.test': () => ({
      ok: true,
      url: `https://${team.domain}.slack.com/`,
      team: team.name,
      team_id: team.id,
      ...bot,
    }),
    'conversations.list': (p) => {
      const all = channels.filter((c) => visible(c));
      const types = String(p.types ?? 'public_channel').split(',');
      const { slice, response_metadata } = page(
        all.filter((c) => types.includes(c.is_private ? 'private_channel' : 'public_channel')),
        p,
      );
      return {
        ok: true,
        channels: slice.map((c) => ({ ...c, is_channel: true, is_archived: false })),
        response_metadata,
      };
    },
    'conversations.info': (p) => {
      const c = visible(findChannel(p.channel));
      return c ? { ok: true, channel: { ...c, is_channel: true } } : fail('channel_not_found');
    },
    'conversations.history': (p) => {
      const c = visible(findChannel(p.channel));
      if (!c || c.id !== p.channel) return fail('channel_not_found'); // history takes ids only
      if (!c.is_member && c.is_private) return fail('not_in_channel');
      const oldest = p.oldest ? micros(String(p.oldest)) : -1n;
      const latest = p.latest ? micros(String(p.latest)) : BigInt(Number.MAX_SAFE_INTEGER) * 1000n;
      const inclusive = truthy(p.inclusive);
      const top = history
        .get(c.id)!
        .filter((m) => !m.thread_ts || m.thread_ts === m.ts)
        .filter((m) => {
          const t = micros(m.ts);
          return (inclusive ? t >= oldest : t > oldest) && (inclusive ? t <= latest : t < latest);
        })
        .reverse();
      const { slice, has_more, response_metadata } = page(top, p, 999);
      return {
        ok: true,
        messages: slice.map((m) => shown(m, truthy(p.include_all_metadata))),
        has_more,
        response_metadata,
      };
    },
    'conversations.replies': (p) => {
      const c = visible(findChannel(p.channel));
      if (!c || c.id !== p.channel) return fail('channel_not_found');
      const thread = history.get(c.id)!.filter((m) => m.ts === p.ts || m.thread_ts === p.ts);
      if (thread.length === 0) return fail('thread_not_found');
      const { slice, has_more, response_metadata } = page(thread, p);
      return {
        ok: true,
        messages: slice.map((m) => shown(m, truthy(p.include_all_metadata))),
        has_more,
        response_metadata,
      };
    },
    'chat.postMessage': (p) => {
      const c = visible(findChannel(p.channel));
      if (!c) return fail('channel_not_found');
      if (!c.is_member) return fail('not_in_channel');
      const blocks = typeof p.blocks === 'string' ? (JSON.parse(p.blocks) as unknown[]) : (p.blocks as unknown[]);
      if (!p.text && !blocks?.length) return fail('no_text');
      if (String(p.text ?? '').length > 40_000) return fail('msg_too_long');
      const metadata = typeof p.metadata === 'string' ? JSON.parse(p.metadata) : p.metadata;
      if (metadata && (typeof metadata.event_type !== 'string' || typeof metadata.event_payload !== 'object'))
        return fail('invalid_metadata_format');
      const messages = history.get(c.id)!;
      const parent = p.thread_ts ? messages.find((m) => m.ts === p.thread_ts) : undefined;
      if (p.thread_ts && !parent) return fail('thread_not_found');
      const message: StoredMessage = {
        type: 'message',
        ts: newTs(),
        user: bot.user_id,
        bot_id: bot.bot_id,
        text: String(p.text ?? ''),
        ...(blocks ? { blocks } : {}),
        ...(parent ? { thread_ts: parent.ts } : {}),
        ...(metadata ? { metadata } : {}),
      };
      if (parent) {
        parent.thread_ts = parent.ts;
        parent.reply_count = (parent.reply_count ?? 0) + 1;
      }
      messages.push(message);
      return { ok: true, channel: c.id, ts: message.ts, message: shown(message, false) };
    },
    'chat.update': (p) => {
      const c = visible(findChannel(p.channel));
      if (!c) return fail('channel_not_found');
      const message = history.get(c.id)!.find((m) => m.ts === p.ts);
      if (!message) return fail('message_not_found');
      if (message.user !== bot.user_id) return fail('cant_update_message');
      if (!p.text) return fail('no_text');
      message.text = String(p.text);
      message.edited = { user: bot.user_id, ts: newTs() };
      return { ok: true, channel: c.id, ts: message.ts, text: message.text, message: shown(message, false) };
    },
    'files.getUploadURLExternal': (p) => {
      const length = Number(p.length);
      if (!p.filename || !Number.isInteger(length) || length < 1) return fail('invalid_arguments');
      const id = newId('F');
      files.set(id, {
        id,
        name: String(p.filename),
        title: String(p.filename),
        size: length,
        mimetype: 'application/octet-stream',
        permalink: `https://${team.domain}.slack.com/files/${bot.user_id}/${id}/${String(p.filename)}`,
      });
      return { ok: true, upload_url: `${base}/upload/v1/${id}`, file_id: id };
    },
    'files.completeUploadExternal': (p) => {
      const list = (typeof p.files === 'string' ? JSON.parse(p.files) : p.files) as { id: string; title?: string }[];
      if (!Array.isArray(list) || list.length === 0) return fail('invalid_arguments');
      const shared = list.map((f) => files.get(f.id));
      if (shared.some((f) => !f?.content)) return fail('file_not_found');
      for (const [i, f] of shared.entries()) if (list[i].title) f!.title = list[i].title!;
      const described = shared.map((f) => {
        const { content, ...rest } = f!;
        void content;
        return rest;
      });
      if (p.channel_id) {
        const c = visible(findChannel(p.channel_id));
        if (!c) return fail('channel_not_found');
        if (!c.is_member) return fail('not_in_channel');
        const messages = history.get(c.id)!;
        const parent = p.thread_ts ? messages.find((m) => m.ts === p.thread_ts) : undefined;
        if (p.thread_ts && !parent) return fail('thread_not_found');
        messages.push({
          type: 'message',
          ts: newTs(),
          user: bot.user_id,
          text: String(p.initial_comment ?? ''),
          files: described,
          ...(parent ? { thread_ts: parent.ts } : {}),
        });
      }
      return { ok: true, files: described };
    },
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };

  async function paramsOf(req: http.IncomingMessage, raw: Buffer): Promise<Record<string, unknown>> {
    const type = req.headers['content-type'] ?? '';
    if (type.includes('application/json')) return JSON.parse(raw.toString() || '{}') as Record<string, unknown>;
    if (type.includes('multipart/form-data')) {
      const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': type } }).formData();
      return Object.fromEntries([...form.entries()].map(([k, v]) => [k, v]));
    }
    return parseQuery(raw.toString()) as Record<string, unknown>;
  }

  async function authorized(req: http.IncomingMessage, params: Record<string, unknown>) {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : typeof params.token === 'string' ? params.token : '';
    if (!token) return 'not_authed';
    if (tokens.has(token) || (opts.authorize && (await opts.authorize(token)))) return undefined;
    return 'invalid_auth';
  }

  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks);
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        const upload = /^\/upload\/v1\/(\w+)$/.exec(path);
        if (req.method !== 'POST') return send(res, 405, fail('method_not_supported_for_channel_type'));
        const params = await paramsOf(req, raw);
        const refusedAs = await authorized(req, params);
        if (upload) {
          const file = files.get(upload[1]);
          if (refusedAs || !file) return send(res, refusedAs ? 401 : 404, fail(refusedAs ?? 'file_not_found'));
          // The client sends the bytes as a multipart field; a raw body is taken as they are.
          const part = Object.values(params).find((v) => v instanceof Blob);
          const bytes = part ? Buffer.from(await part.arrayBuffer()) : raw;
          if (bytes.length !== file.size) return send(res, 400, fail('invalid_length'));
          file.content = bytes;
          res.writeHead(200, { 'content-type': 'text/plain' });
          return res.end(`OK - ${bytes.length}`);
        }
        const method = /^\/api\/([\w.]+)$/.exec(path)?.[1];
        if (refusedAs) return send(res, 200, fail(refusedAs));
        if (!method || !methods[method]) return send(res, 200, fail('unknown_method'));
        const limit = limits.get(method);
        if (limit && limit.times > 0) {
          limit.times--;
          rateLimited.push(method);
          return send(res, 429, fail('ratelimited'), { 'retry-after': String(limit.seconds) });
        }
        const { token: _token, ...logged } = params;
        void _token;
        calls.push({ method, params: logged });
        const answer = methods[method](params);
        if (losing.delete(method)) {
          req.socket.destroy(); // carried out, but the caller never hears
          return;
        }
        send(res, 200, answer);
      })().catch((err: Error) => send(res, 500, fail('internal_error', { detail: err.message })));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const fake: FakeSlack = {
    url: base,
    calls,
    rateLimited,
    addBotToken: (token) => void tokens.add(token),
    addChannel(name, o = {}) {
      const channel = { id: newId(o.private ? 'G' : 'C'), name, is_private: !!o.private, is_member: o.member ?? true };
      channels.push(channel);
      history.set(channel.id, []);
      return channel;
    },
    channel(name) {
      const c = byName(name);
      if (!c) throw new Error(`the fake Slack has no channel #${name}`);
      return c;
    },
    messages: (name) => history.get(fake.channel(name).id)!,
    postAsPerson(name, text, user = 'U0PERSON1') {
      const message: StoredMessage = { type: 'message', ts: newTs(), user, text };
      history.get(fake.channel(name).id)!.push(message);
      return message;
    },
    rateLimit: (method, seconds, times = 1) => void limits.set(method, { seconds, times }),
    loseAnswer: (method) => void losing.add(method),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
