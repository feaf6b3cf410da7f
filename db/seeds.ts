// First start: a demo workspace with API access, the example agents (live), and an API key shown once.
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { repoRoot } from '../repo-root';
import { parseAgentSpec } from '../model/agent-checks';
import { triggerInputSchema, type TriggerInput } from '../model/trigger';
import { createApiKey } from './api-keys';
import { createInvitation } from './invitations';
import { createAgent } from './agents';
import { insertTrigger } from './triggers';
import { createWorkspace, setApiEnabled } from './workspaces';

export const examplesDir = path.join(repoRoot, 'examples');

/**
 * The schedules an example ships with (examples/schedules/<example>.json, trigger bodies as the API takes them), each
 * with the input it runs on: test/unit/example-schedules.test.ts checks the agent's input node reads it.
 */
export function exampleSchedules(exampleFile: string): (TriggerInput & { name: string })[] {
  const file = path.join(examplesDir, 'schedules', exampleFile);
  if (!fs.existsSync(file)) return [];
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as unknown[]).map((body) => {
    const trigger = triggerInputSchema.parse(body);
    if (!trigger.name) throw new Error(`${file}: each shipped trigger needs a name`);
    return { ...trigger, name: trigger.name };
  });
}

export interface DemoSeed {
  workspaceId: string;
  apiKey: string;
  agents: { id: string; name: string }[];
}

/** Returns the seed when it created one, undefined when the database already had a workspace. */
export async function seedDemoWorkspace(knex: Knex): Promise<DemoSeed | undefined> {
  if (await knex('workspaces').first('id')) return undefined;
  const ws = await createWorkspace(knex, 'Demo workspace', 'professional');
  await setApiEnabled(knex, ws.id, true);
  const agents = await importExamples(knex, ws.id);
  const { key } = await createApiKey(knex, ws.id, 'demo key', ['run', 'read', 'manage']);
  return { workspaceId: ws.id, apiKey: key, agents };
}

/** The shipped examples as agents of the workspace, with the schedules they ship with. */
export async function importExamples(knex: Knex, workspaceId: string): Promise<DemoSeed['agents']> {
  const agents: DemoSeed['agents'] = [];
  for (const file of fs
    .readdirSync(examplesDir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const spec = parseAgentSpec(JSON.parse(fs.readFileSync(path.join(examplesDir, file), 'utf8')));
    const agent = await createAgent(knex, workspaceId, spec);
    // The shipped examples are tested with the product, so they start live; those acting in other systems wait as
    // drafts until someone connects them (a mailbox, a database, a chat) in Integrations.
    if (spec.connections.length === 0)
      await knex('agents').where({ id: agent.id }).update({ state: 'live', tested_version: 1 });
    // Its schedules: the web process makes Temporal's schedules match these when it starts (schedules/sync.ts).
    for (const { kind, name, ...config } of exampleSchedules(file))
      await insertTrigger(knex, {
        workspace_id: workspaceId,
        agent_id: agent.id,
        kind,
        name,
        config,
        secret_encrypted: null,
        source_agent_id: null,
      });
    agents.push({ id: agent.id, name: agent.name });
  }
  return agents;
}

/**
 * While the first workspace has no member, a one-time owner invitation for it: the person who starts Cadre opens
 * the link and creates the owner account. A new link at each start until someone has; none afterwards.
 */
export async function ownerClaimLink(knex: Knex, publicUrl: string): Promise<string | undefined> {
  const ws = await knex('workspaces').orderBy('created_at').first('id');
  if (!ws || (await knex('memberships').where({ workspace_id: ws.id }).first('user_id'))) return undefined;
  return (await createInvitation(knex, { workspaceId: ws.id, role: 'owner', publicUrl })).url;
}
