// Chat Mode over HTTP: a caller's conversations with the assistant, and a question answered as server-sent events
// (its text as it streams, each tool call and result, then the stored message with links to the runs it relies on).
import { Router, type Request } from 'express';
import { jsonSchema, nullable, obj, ref, sse, type Route } from '../openapi-schemas';
import { getAgent } from '../../db/agents';
import { appendExchange, createConversation, getConversation, listConversations, listMessages } from '../../db/chat';
import type { ConversationRow, MessageRow } from '../../db/chat';
import { noModelMessage } from '../../services/wizard/model-client';
import { answer, ModelCallError, type ChatEvent, type ModelSettings } from '../../services/chat/assistant';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { bodies } from '../request-bodies';
import { jsonBody, param, parseBody } from '../validation';
import { parseQuery, queries } from '../query-params';
import type { RouteDeps } from './agents';

export interface ChatRouteDeps extends RouteDeps {
  /** The model the assistant uses; without an API key Chat Mode says how to set one. */
  model?: ModelSettings;
}

/** Conversations are private to whoever began them: a person, or an API key. */
const ownerOf = (req: Request) => (req.auth!.user ? `user:${req.auth!.user.id}` : `key:${req.auth!.key!.id}`);

export function chatRoutes(deps: ChatRouteDeps): Router {
  const { knex } = deps;
  const r = Router();
  const base = deps.links.publicUrl;

  const runLinks = (ids: string[]) =>
    ids.map((id) => ({ run_id: id, console_url: `${base}/runs/${id}`, api_url: `${base}/v1/runs/${id}` }));
  const conversationJson = (c: ConversationRow) => ({
    id: c.id,
    agent_id: c.agent_id,
    agent_name: c.agent_name,
    title: c.title,
    created_at: new Date(c.created_at).toISOString(),
    updated_at: new Date(c.updated_at).toISOString(),
    usage: {
      input_tokens: Number(c.input_tokens),
      output_tokens: Number(c.output_tokens),
      cache_read_tokens: Number(c.cache_read_tokens),
      cost_usd: Number(c.cost_usd),
    },
    links: { self: `${base}/v1/chat/conversations/${c.id}`, console: `${base}/chat/${c.id}` },
  });
  const messageJson = (m: MessageRow) => ({
    id: m.id,
    seq: m.seq,
    role: m.role,
    text: m.text,
    tool_calls: m.tool_calls,
    runs: runLinks(m.run_ids),
    usage: m.usage,
    created_at: new Date(m.created_at).toISOString(),
  });
  const modelStatus = () => {
    const configured = Boolean(deps.model?.apiKey);
    return {
      configured,
      name: configured ? deps.model!.name : null,
      hint: configured ? null : `${noModelMessage} in the web process's environment to use Chat Mode`,
    };
  };
  // Without a model no conversation can be answered: one is neither begun nor asked, and the refusal says what to
  // set (the words Chat Mode shows in the console).
  const requireModel = (): ModelSettings & { apiKey: string } => {
    const model = deps.model;
    if (!model?.apiKey) throw new ApiError(503, 'model_not_configured', modelStatus().hint!);
    return { ...model, apiKey: model.apiKey };
  };
  const loadConversation = async (req: Request) => {
    const c = await getConversation(knex, req.auth!.workspace.id, ownerOf(req), param(req, 'id'));
    if (!c) throw new ApiError(404, 'conversation_not_found', `you have no conversation ${param(req, 'id')}`);
    return c;
  };

  r.get('/chat/conversations', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listConversations, req.query);
    const page = await listConversations(knex, req.auth!.workspace.id, ownerOf(req), q);
    res.json({ data: page.data.map(conversationJson), next_cursor: page.next_cursor, model: modelStatus() });
  });

  r.post('/chat/conversations', requirePermission('read'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const body = parseBody(bodies.createConversation, req.body);
    const ws = req.auth!.workspace;
    const agent = body.agent_id ? await getAgent(knex, ws.id, body.agent_id) : undefined;
    if (body.agent_id && !agent)
      throw new ApiError(404, 'agent_not_found', `no agent ${body.agent_id} in this workspace`);
    requireModel();
    const c = await createConversation(knex, {
      workspaceId: ws.id,
      owner: ownerOf(req),
      agentId: agent?.id ?? null,
      title: body.title ?? (agent ? `About ${agent.name}` : 'New conversation'),
    });
    res
      .status(201)
      .location(`/v1/chat/conversations/${c.id}`)
      .json({ ...conversationJson(c), messages: [] });
  });

  r.get('/chat/conversations/:id', requirePermission('read'), async (req, res) => {
    const c = await loadConversation(req);
    const messages = await listMessages(knex, c.id);
    res.json({ ...conversationJson(c), messages: messages.map(messageJson), model: modelStatus() });
  });

  r.post(
    '/chat/conversations/:id/messages',
    requirePermission('read'),
    ...jsonBody(deps.bodyLimit),
    async (req, res) => {
      const c = await loadConversation(req);
      const { text } = parseBody(bodies.askChat, req.body);
      const model = requireModel();

      // From here on the answer is a stream: problems become an `error` event, and nothing is stored.
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      const send = (event: string, data: unknown) => {
        if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      const gone = new AbortController();
      res.on('close', () => gone.abort());
      try {
        const history = await listMessages(knex, c.id);
        const out = await answer({
          model,
          conversation: c,
          history,
          question: text,
          tools: { deps, caller: req.auth!, conversationId: c.id },
          emit: (e: ChatEvent) => send(e.event, e.data),
          signal: gone.signal,
        });
        const stored = await appendExchange(
          knex,
          c.id,
          { text, turns: [{ role: 'user', content: text }] },
          { text: out.text, turns: out.turns, tool_calls: out.tool_calls, run_ids: out.run_ids, usage: out.usage },
          history.length === 0 && /^(New conversation|About .*)$/.test(c.title) ? titleOf(text) : undefined,
        );
        const updated = (await getConversation(knex, c.workspace_id, c.owner, c.id))!;
        send('message', {
          conversation: conversationJson(updated),
          question: messageJson(stored.question),
          answer: messageJson(stored.answer),
        });
      } catch (err) {
        const problem =
          err instanceof ModelCallError || err instanceof ApiError
            ? { status: err.status, code: err.code, detail: err.message }
            : { status: 500, code: 'internal_error', detail: 'the answer could not be completed; try again' };
        if (problem.status === 500) req.log?.error({ err }, 'chat answer failed');
        send('error', problem);
      }
      res.end();
    },
  );

  return r;
}

/** A conversation is named after its first question. */
const titleOf = (text: string) => {
  const line = text.trim().split('\n')[0];
  return line.length > 80 ? `${line.slice(0, 77)}…` : line;
};

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const chatRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/chat/conversations',
    id: 'listConversations',
    summary:
      "Chat Mode: the caller's conversations, most recently active first (?limit=&cursor=), and whether a model is configured",
    scope: 'read',
    ok: {
      200: obj({
        data: { type: 'array', items: ref('Conversation') },
        next_cursor: nullable({ type: 'string' }),
        model: ref('ChatModel'),
      }),
    },
  },
  {
    method: 'post',
    path: '/chat/conversations',
    id: 'createConversation',
    summary:
      'Chat Mode: begin a conversation, optionally about one agent. 503 model_not_configured when no model is configured (it could never be answered).',
    scope: 'read',
    body: jsonSchema(bodies.createConversation),
    ok: { 201: { allOf: [ref('Conversation'), obj({ messages: { type: 'array', maxItems: 0 } })] } },
    errors: [503],
  },
  {
    method: 'get',
    path: '/chat/conversations/{id}',
    id: 'getConversation',
    summary: 'Chat Mode: a conversation with its messages, their tool calls, linked runs and usage',
    scope: 'read',
    ok: {
      200: {
        allOf: [
          ref('Conversation'),
          obj({ messages: { type: 'array', items: ref('ChatMessage') }, model: ref('ChatModel') }),
        ],
      },
    },
  },
  {
    method: 'post',
    path: '/chat/conversations/{id}/messages',
    id: 'askChat',
    summary:
      'Chat Mode: ask the assistant; the answer streams as server-sent events. It can read and run agents and decide approvals (each by your role), never change configuration. 503 when no model is configured.',
    scope: 'read',
    body: jsonSchema(bodies.askChat),
    ok: {
      200: sse(
        'Server-sent events: `text` pieces as they stream, `tool_call` and `tool_result`, then `message` (or `error`)',
        {
          text: obj({ text: { type: 'string' } }),
          tool_call: obj({ id: { type: 'string' }, name: { type: 'string' }, input: {} }),
          tool_result: obj({
            id: { type: 'string' },
            name: { type: 'string' },
            is_error: { type: 'boolean' },
            run_ids: { type: 'array', items: { type: 'string' } },
          }),
          message: obj({ conversation: ref('Conversation'), question: ref('ChatMessage'), answer: ref('ChatMessage') }),
          error: obj({ status: { type: 'integer' }, code: { type: 'string' }, detail: { type: 'string' } }),
        },
      ),
    },
    errors: [503],
  },
];
