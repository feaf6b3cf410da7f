// Chat Mode's conversations and their messages. A conversation belongs to the person (or API key) that began it;
// its usage and cost add up every answer's, as a run's add up its items'.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { decodeTimeCursor, isUuid, timeCursorPage } from './runs';

export interface ChatUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cost_usd: number;
}

export interface ConversationRow {
  id: string;
  workspace_id: string;
  owner: string;
  agent_id: string | null;
  agent_name: string | null;
  title: string;
  input_tokens: string | number;
  output_tokens: string | number;
  cache_read_tokens: string | number;
  cost_usd: number;
  created_at: Date;
  updated_at: Date;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  input: unknown;
  is_error: boolean;
  /** What the tool answered, shortened for display (the model saw it whole). */
  result: string;
}

export interface MessageRow {
  id: string;
  seq: number;
  role: 'user' | 'assistant';
  text: string;
  /** The turns sent to or received from the model (Anthropic MessageParam objects). */
  turns: { role: string; content: unknown }[];
  tool_calls: ToolCallRecord[];
  run_ids: string[];
  usage: ChatUsage | null;
  created_at: Date;
}

const conversations = (knex: Knex) =>
  knex('chat_conversations as c').leftJoin('agents as a', 'a.id', 'c.agent_id').select('c.*', 'a.name as agent_name');

export async function createConversation(
  knex: Knex,
  c: { workspaceId: string; owner: string; agentId: string | null; title: string },
): Promise<ConversationRow> {
  const id = randomUUID();
  await knex('chat_conversations').insert({
    id,
    workspace_id: c.workspaceId,
    owner: c.owner,
    agent_id: c.agentId,
    title: c.title,
  });
  return (await getConversation(knex, c.workspaceId, c.owner, id))!;
}

export async function getConversation(
  knex: Knex,
  workspaceId: string,
  owner: string,
  id: string,
): Promise<ConversationRow | undefined> {
  if (!isUuid(id)) return undefined;
  return conversations(knex).where({ 'c.id': id, 'c.workspace_id': workspaceId, 'c.owner': owner }).first();
}

/** A page of the owner's conversations, the most recently active first; the cursor is (updated_at, id). */
export async function listConversations(
  knex: Knex,
  workspaceId: string,
  owner: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: ConversationRow[]; next_cursor: string | null }> {
  const q = conversations(knex)
    .select(knex.raw('c.updated_at::text as cursor_at'))
    .where({ 'c.workspace_id': workspaceId, 'c.owner': owner });
  if (page.cursor) q.whereRaw('(c.updated_at, c.id) < (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  const rows: (ConversationRow & { cursor_at: string })[] = await q
    .orderBy([
      { column: 'c.updated_at', order: 'desc' },
      { column: 'c.id', order: 'desc' },
    ])
    .limit(page.limit + 1);
  return timeCursorPage(rows, page.limit);
}

export async function listMessages(knex: Knex, conversationId: string): Promise<MessageRow[]> {
  return knex('chat_messages').where({ conversation_id: conversationId }).orderBy('seq').select('*');
}

/**
 * Stores a question and its answer together, and adds the answer's usage to the conversation's: a failed answer
 * leaves nothing half-written, and the question can be asked again.
 */
export async function appendExchange(
  knex: Knex,
  conversationId: string,
  question: Pick<MessageRow, 'text' | 'turns'>,
  answer: Pick<MessageRow, 'text' | 'turns' | 'tool_calls' | 'run_ids'> & { usage: ChatUsage },
  /** A new title, for a conversation named after its first question. */
  title?: string,
): Promise<{ question: MessageRow; answer: MessageRow }> {
  return knex.transaction(async (tx) => {
    // Locks the conversation: two answers at once take the next numbers one after the other.
    await tx('chat_conversations').where({ id: conversationId }).forUpdate().first('id');
    const last = await tx('chat_messages').where({ conversation_id: conversationId }).max('seq as seq').first();
    const seq = Number(last?.seq ?? 0);
    const rows = [
      {
        id: randomUUID(),
        seq: seq + 1,
        role: 'user',
        text: question.text,
        turns: question.turns,
        tool_calls: [],
        run_ids: [],
        usage: null,
      },
      { id: randomUUID(), seq: seq + 2, role: 'assistant', ...answer },
    ].map((m) => ({
      ...m,
      conversation_id: conversationId,
      turns: JSON.stringify(m.turns),
      tool_calls: JSON.stringify(m.tool_calls),
      run_ids: JSON.stringify(m.run_ids),
      usage: m.usage ? JSON.stringify(m.usage) : null,
    }));
    const inserted: MessageRow[] = await tx('chat_messages').insert(rows).returning('*');
    await tx('chat_conversations')
      .where({ id: conversationId })
      .update({
        input_tokens: tx.raw('input_tokens + ?', [answer.usage.input_tokens]),
        output_tokens: tx.raw('output_tokens + ?', [answer.usage.output_tokens]),
        cache_read_tokens: tx.raw('cache_read_tokens + ?', [answer.usage.cache_read_tokens]),
        cost_usd: tx.raw('cost_usd + ?', [answer.usage.cost_usd]),
        updated_at: tx.fn.now(),
        ...(title ? { title } : {}),
      });
    const bySeq = inserted.sort((a, b) => a.seq - b.seq);
    return { question: bySeq[0], answer: bySeq[1] };
  });
}
