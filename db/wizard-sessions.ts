// Wizard sessions (migration 022): what the agent creation wizard has gathered and generated so far, and the
// conversation with the model that produced it, kept after the agent exists as its creation history.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AgentSpec } from '../model/agent';
import type { InstructionParts, ProposedConnection } from '../model/wizard';

export interface WizardFile {
  name: string;
  format: string;
  size: number;
  /** The source the file became (its name), which the generated agent lists. */
  source: string;
  /** The start of its text when it is text (txt, csv, json, md, xml), shown to the model as context. */
  excerpt?: string;
}
export interface WizardQuestion {
  question: string;
  why: string;
  answer?: string;
}
export interface WizardAttempt {
  /** What was wrong with the generated graph; empty when it validated. */
  problems: string[];
  at: string;
}
export interface WizardMessage {
  role: 'user' | 'assistant';
  /** The step it belongs to: questions, instructions, workflow. */
  step: string;
  content: unknown;
}
export interface WizardUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cost_usd: number;
}

export interface WizardSessionRow {
  id: string;
  workspace_id: string;
  created_by: string;
  goal: string;
  files: WizardFile[];
  questions: WizardQuestion[];
  instructions: InstructionParts | null;
  connections: ProposedConnection[];
  spec: AgentSpec | null;
  sample_input: string | null;
  attempts: WizardAttempt[];
  conversation: WizardMessage[];
  usage: WizardUsage;
  agent_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const jsonColumns = ['files', 'questions', 'instructions', 'connections', 'spec', 'attempts', 'conversation', 'usage'];

/** jsonb columns take JSON text (pg would send a JS array as a Postgres array). */
function encode(changes: Partial<WizardSessionRow>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(changes).map(([k, v]) => [k, jsonColumns.includes(k) && v !== null ? JSON.stringify(v) : v]),
  );
}

export async function createWizardSession(
  knex: Knex,
  values: { workspace_id: string; created_by: string; goal: string; files: WizardFile[] },
): Promise<WizardSessionRow> {
  const [row] = await knex('wizard_sessions')
    .insert(encode({ id: randomUUID(), ...values }))
    .returning('*');
  return row;
}

export async function getWizardSession(
  knex: Knex,
  workspaceId: string,
  id: string,
): Promise<WizardSessionRow | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return knex('wizard_sessions').where({ workspace_id: workspaceId, id }).first();
}

/** The session that created an agent: its creation history. */
export async function wizardSessionOfAgent(
  knex: Knex,
  workspaceId: string,
  agentId: string,
): Promise<WizardSessionRow | undefined> {
  return knex('wizard_sessions')
    .where({ workspace_id: workspaceId, agent_id: agentId })
    .orderBy('created_at', 'desc')
    .first();
}

export async function updateWizardSession(
  knex: Knex,
  session: WizardSessionRow,
  changes: Partial<Omit<WizardSessionRow, 'id' | 'workspace_id' | 'created_at'>>,
): Promise<WizardSessionRow> {
  const [row] = await knex('wizard_sessions')
    .where({ id: session.id })
    .update({ ...encode(changes), updated_at: knex.fn.now() })
    .returning('*');
  return row;
}
