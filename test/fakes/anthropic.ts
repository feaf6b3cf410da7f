// A local Anthropic-compatible server speaking the Messages API wire format over real HTTP, so tests drive the
// real @anthropic-ai/sdk (its retries, headers and error classes) against answers scripted per test. Point the
// SDK at `url` as its baseURL; it appends /v1/messages. Every request is recorded for assertions, and requests
// the real API would refuse (a tool_use left without its tool_result, a bad tool name, …) are refused the same
// way, so a step that only works against the fake cannot pass. A request with `stream: true` is answered with the
// API's server-sent events (message_start, content_block_start/delta/stop, message_delta, message_stop), so the
// SDK's `messages.stream()` reads the same scripted reply as it arrives.
import { randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content?: unknown; is_error?: boolean }
  | { type: string; [k: string]: unknown };

export interface MessageParam {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

/** The body the SDK sent to POST /v1/messages. */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  system?: string | { type: 'text'; text: string; cache_control?: { type: string } }[];
  messages: MessageParam[];
  tools?: { name: string; description?: string; input_schema: Record<string, unknown> }[];
  [k: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: MessagesRequest;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A successful turn; id, model, stop_reason and usage are filled in like the API does when left out. */
export interface MessageReply {
  content: ContentBlock[];
  stop_reason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'pause_turn' | 'refusal';
  usage?: Partial<Usage>;
  model?: string;
  delayMs?: number;
  /** Streamed answers only: a pause between events, so a reader can see text arrive piece by piece. */
  streamDelayMs?: number;
}

/** An API error: `{type:'error', error:{type, message}}` with this status. */
export interface ErrorReply {
  status: number;
  error: { type: string; message: string };
  headers?: Record<string, string>;
  delayMs?: number;
}

/** Anything else on the wire, e.g. a malformed body from a broken proxy. */
export interface RawReply {
  status: number;
  raw: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export type Reply = MessageReply | ErrorReply | RawReply;
export type Handler = (body: MessagesRequest, index: number) => Reply | Promise<Reply>;

export interface FakeAnthropic {
  /** The SDK's baseURL (no trailing slash, no /v1). */
  url: string;
  /** Every request received, in arrival order, including refused ones. */
  requests: RecordedRequest[];
  /** The most requests that were being answered at once (delays make overlap visible). */
  readonly maxInFlight: number;
  setHandler(handler: Handler): void;
  /** Forgets recorded requests and the in-flight high-water mark (the handler stays). */
  reset(): void;
  close(): Promise<void>;
}

// ---- building replies ----

export const text = (t: string): ContentBlock => ({ type: 'text', text: t });

export const toolUse = (name: string, input: unknown, id = newId('toolu_')): ContentBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
});

export const reply = (content: ContentBlock[], extra: Omit<MessageReply, 'content'> = {}): MessageReply => ({
  content,
  ...extra,
});

export const apiErrors = {
  invalidRequest: (message: string): ErrorReply => ({ status: 400, error: { type: 'invalid_request_error', message } }),
  authentication: (message = 'invalid x-api-key'): ErrorReply => ({
    status: 401,
    error: { type: 'authentication_error', message },
  }),
  rateLimited: (
    retryAfterSeconds = '0',
    message = 'Number of request tokens has exceeded your per-minute rate limit',
  ): ErrorReply => ({
    status: 429,
    error: { type: 'rate_limit_error', message },
    headers: { 'retry-after': retryAfterSeconds },
  }),
  internal: (message = 'Internal server error'): ErrorReply => ({ status: 500, error: { type: 'api_error', message } }),
  overloaded: (message = 'Overloaded'): ErrorReply => ({ status: 529, error: { type: 'overloaded_error', message } }),
};

// ---- reading requests ----

/** The item a Cadre llm step sent: the JSON after "Item:" in the first user turn. */
export function itemOf(body: MessagesRequest): Record<string, unknown> {
  const first = body.messages[0];
  const textContent =
    typeof first.content === 'string'
      ? first.content
      : first.content
          .filter((b): b is { type: 'text'; text: string } => b.type === 'text')
          .map((b) => b.text)
          .join('');
  const json = textContent.slice(textContent.indexOf('{'));
  return JSON.parse(json);
}

/** How many assistant turns the conversation already holds (0 on an item's first request). */
export const turnOf = (body: MessagesRequest) => body.messages.filter((m) => m.role === 'assistant').length;

/** The tool_result blocks of the last user turn. */
export function toolResultsOf(body: MessagesRequest) {
  const last = body.messages[body.messages.length - 1];
  if (last.role !== 'user' || typeof last.content === 'string') return [];
  return last.content.filter(
    (b): b is { type: 'tool_result'; tool_use_id: string; content?: unknown; is_error?: boolean } =>
      b.type === 'tool_result',
  );
}

export function newId(prefix: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return prefix + [...randomBytes(24)].map((b) => alphabet[b % alphabet.length]).join('');
}

// ---- the server ----

/** What the real API refuses with 400 invalid_request_error, as far as Cadre's requests go. */
export function wireProblems(body: MessagesRequest): string[] {
  const problems: string[] = [];
  if (typeof body !== 'object' || body === null) return ['body: Input should be an object'];
  if (typeof body.model !== 'string' || !body.model) problems.push('model: Field required');
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) problems.push('max_tokens: Field required');
  if (body.stream !== undefined && typeof body.stream !== 'boolean') problems.push('stream: Input should be a boolean');
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    problems.push('messages: at least one message is required');
    return problems;
  }
  if (body.messages[0].role !== 'user') problems.push('messages.0.role: the first message must use the "user" role');
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) problems.push('system: Input should be a valid string or list');
    else
      body.system.forEach((b, i) => {
        if (b.type !== 'text' || typeof b.text !== 'string' || !b.text)
          problems.push(`system.${i}: text content blocks must be non-empty`);
        if (b.cache_control && b.cache_control.type !== 'ephemeral')
          problems.push(`system.${i}.cache_control.type: Input should be 'ephemeral'`);
      });
  }
  const toolNames = new Set<string>();
  (body.tools ?? []).forEach((t, i) => {
    if (!/^[a-zA-Z0-9_-]{1,128}$/.test(t.name))
      problems.push(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
    if (toolNames.has(t.name)) problems.push(`tools: Tool names must be unique.`);
    toolNames.add(t.name);
    if (t.input_schema?.type !== 'object') problems.push(`tools.${i}.custom.input_schema.type: Field required`);
  });
  body.messages.forEach((m, i) => {
    if (m.role !== 'user' && m.role !== 'assistant')
      problems.push(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const blocks = typeof m.content === 'string' ? [] : m.content;
    if (typeof m.content === 'string' ? !m.content : m.content.length === 0) {
      if (i !== body.messages.length - 1 || m.role !== 'assistant')
        problems.push(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
    }
    const previous = body.messages[i - 1];
    const offered = new Set(
      previous && previous.role === 'assistant' && typeof previous.content !== 'string'
        ? previous.content.filter((b) => b.type === 'tool_use').map((b) => (b as { id: string }).id)
        : [],
    );
    blocks.forEach((b, j) => {
      if (b.type === 'tool_use' && m.role !== 'assistant')
        problems.push(`messages.${i}.content.${j}: tool_use blocks belong to assistant turns`);
      if (b.type === 'tool_result') {
        const id = (b as { tool_use_id: string }).tool_use_id;
        if (m.role !== 'user' || !offered.has(id))
          problems.push(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
      }
    });
    if (m.role === 'assistant' && i < body.messages.length - 1) {
      const next = body.messages[i + 1];
      const answered = new Set(
        typeof next.content === 'string'
          ? []
          : next.content.filter((b) => b.type === 'tool_result').map((b) => (b as { tool_use_id: string }).tool_use_id),
      );
      const missing = blocks.filter((b) => b.type === 'tool_use' && !answered.has((b as { id: string }).id));
      if (missing.length > 0)
        problems.push(
          `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.map((b) => (b as { id: string }).id).join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
    }
  });
  return problems;
}

/** Pieces of a text as the API streams them: a few words at a time. */
function textPieces(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += 3) pieces.push(words.slice(i, i + 3).join(''));
  return pieces.length ? pieces : [''];
}

/** The message as the API's event stream: usage's input side first, the output tokens and stop reason at the end. */
async function streamMessage(
  res: http.ServerResponse,
  message: { content: ContentBlock[]; stop_reason: string; usage: Usage; [k: string]: unknown },
  delayMs: number,
) {
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': newId('req_') });
  const emit = async (type: string, data: Record<string, unknown>) => {
    if (res.destroyed) return;
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  };
  const { output_tokens, ...inputUsage } = message.usage;
  await emit('message_start', {
    message: { ...message, content: [], stop_reason: null, usage: { ...inputUsage, output_tokens: 1 } },
  });
  await emit('ping', {});
  for (const [index, block] of message.content.entries()) {
    if (block.type === 'text') {
      await emit('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of textPieces(String(block.text)))
        await emit('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else if (block.type === 'tool_use') {
      const { input, ...head } = block as { input: unknown; [k: string]: unknown };
      await emit('content_block_start', { index, content_block: { ...head, input: {} } });
      const json = JSON.stringify(input ?? {});
      for (let i = 0; i < json.length; i += 16)
        await emit('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: json.slice(i, i + 16) },
        });
    } else {
      await emit('content_block_start', { index, content_block: block });
    }
    await emit('content_block_stop', { index });
  }
  await emit('message_delta', {
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens },
  });
  await emit('message_stop', {});
  res.end();
}

const defaultHandler: Handler = () => ({
  status: 500,
  error: { type: 'api_error', message: 'the fake Anthropic server has no handler for this test' },
});

export async function startFakeAnthropic(handler: Handler = defaultHandler): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  let current = handler;
  let inFlight = 0;
  let maxInFlight = 0;

  const send = (res: http.ServerResponse, status: number, payload: string, headers: Record<string, string> = {}) => {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': newId('req_'), ...headers }).end(payload);
  };
  const sendError = (
    res: http.ServerResponse,
    status: number,
    type: string,
    message: string,
    headers?: Record<string, string>,
  ) => send(res, status, JSON.stringify({ type: 'error', error: { type, message } }), headers);

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void answer(req, Buffer.concat(chunks).toString('utf8'), res);
    });
  });

  async function answer(req: http.IncomingMessage, raw: string, res: http.ServerResponse) {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    let body: MessagesRequest;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return sendError(res, 400, 'invalid_request_error', 'The request body is not valid JSON.');
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      return sendError(res, 404, 'not_found_error', `${req.method} ${path} is not served by the fake`);
    }
    const index = requests.length;
    requests.push({ method: req.method, path, headers: req.headers, body });
    if (!req.headers['x-api-key'] && !req.headers.authorization) {
      return sendError(res, 401, 'authentication_error', 'x-api-key header is required');
    }
    if (!req.headers['anthropic-version']) {
      return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    }
    const problems = wireProblems(body);
    if (problems.length > 0) return sendError(res, 400, 'invalid_request_error', problems.join('; '));

    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      let out: Reply;
      try {
        out = await current(body, index);
      } catch (err) {
        out = apiErrors.internal(`the test's fake handler threw: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (out.delayMs) await new Promise((r) => setTimeout(r, out.delayMs));
      if ('raw' in out) return send(res, out.status, out.raw, out.headers);
      if ('error' in out) return sendError(res, out.status, out.error.type, out.error.message, out.headers);
      const hasToolUse = out.content.some((b) => b.type === 'tool_use');
      const message = {
        id: newId('msg_'),
        type: 'message',
        role: 'assistant',
        model: out.model ?? body.model,
        content: out.content,
        stop_reason: out.stop_reason ?? (hasToolUse ? 'tool_use' : 'end_turn'),
        stop_sequence: null,
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          ...out.usage,
        },
      };
      if (body.stream === true) await streamMessage(res, message, out.streamDelayMs ?? 0);
      else send(res, 200, JSON.stringify(message));
    } finally {
      inFlight--;
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get maxInFlight() {
      return maxInFlight;
    },
    setHandler(next) {
      current = next;
    },
    reset() {
      requests.length = 0;
      maxInFlight = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
