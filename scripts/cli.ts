// The operator CLI: what an operator does without the console. Output is only the value asked for (an id, a
// key), so it composes in shell scripts; errors are one line on stderr and a non-zero exit.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { loadConfig } from '../cadre.config';
import { validateAgentSpec } from '../api/agent-validation';
import { ApiError } from '../api/problem';
import { bodies } from '../api/request-bodies';
import { createApiKey, revokeApiKey, scopes as allScopes, type Scope } from '../db/api-keys';
import { createAgent, overrideAgentState, type AgentState } from '../db/agents';
import { migrate } from '../db/migrate';
import { cadreClient } from '../api/client';
import { loadSecretBox, sealedColumns } from '../db/secret-box';
import { createPasswordReset, findUserByEmail } from '../db/accounts';
import { createInvitation } from '../db/invitations';
import { roles, type Role } from '../db/roles';
import { createWorkspace, getWorkspace, setApiEnabled, setPlan } from '../db/workspaces';
import type { Plan } from '../model/plan';
import { connectDatabase, connectTemporal } from './connections';
import { resumePositions } from '../schedules/event-marks';
import { setSchedulesPaused } from '../schedules/sync';
import { recordEvent } from '../db/timeline';
import { listTriggers } from '../db/triggers';
import { loadTemporalConfig } from '../temporal.config';
import { main, StartupError } from './fail-fast';

const usage = `usage: cadre <command>
  workspace create [--name NAME] [--plan free|professional|enterprise]   prints the workspace id
  workspace enable-api <workspace-id>                                     allows API keys of the workspace to be used
  workspace disable-api <workspace-id>
  workspace set-plan <workspace-id> free|professional|enterprise
  apikey create --workspace <id> --scopes run,read,manage [--name NAME] [--expires WHEN]
                                                                          prints only the key; WHEN (a time to come,
                                                                          with its offset: 2027-01-31T00:00:00Z) ends it
  apikey revoke <key-id> --workspace <id>
  agent import <file.json> --workspace <id>                               prints the agent id
  agent set-state <agent-id> live|paused                                  operator override of the lifecycle
  workspace invite <workspace-id> [--role owner|admin|editor|operator|viewer] [--email ADDRESS]
                                                                          prints a one-time invitation link (7 days)
  user reset-link <email>                                                 prints a one-hour password reset link
  secrets rewrap                                                          after rotating CADRE_SECRET_KEY (the old key in
                                                                          CADRE_SECRET_KEY_PREVIOUS): re-wraps every stored secret
  migrate                                                                 brings the database schema up to date

Through the API (CADRE_API_KEY, or --key; the service at CADRE_PUBLIC_URL, or --url):
  run start <agent-id> (--input TEXT | --input-file PATH) [--idempotency-key K]   prints the run id
  run get <run-id>                                                        prints the run as JSON`;

class UsageError extends StartupError {}

/** --expires, held to the API's own rule for `expires_at` (request-bodies.ts): a date-time with its offset, to come. */
function keyExpiry(typed: string): Date {
  const checked = bodies.createApiKey.shape.expires_at.safeParse(typed);
  if (!checked.success || !checked.data)
    throw new UsageError(
      `--expires ${Date.parse(typed) <= Date.now() ? 'must be in the future' : 'takes an ISO 8601 date-time with its offset, such as 2027-01-31T00:00:00Z'}`,
    );
  return new Date(checked.data);
}

/** The typed API client, for the commands that act as an integrator would. */
function apiClient(values: { key?: string; url?: string }) {
  const apiKey = values.key ?? process.env.CADRE_API_KEY;
  if (!apiKey) throw new UsageError('set CADRE_API_KEY (or pass --key) to call the API');
  return cadreClient({ baseUrl: values.url ?? loadConfig().web.publicUrl, apiKey });
}

/** The answer's body, or the API's problem as the one line the CLI prints. */
function answerOf<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data !== undefined) return result.data;
  const problem = result.error as { detail?: string; code?: string } | undefined;
  throw new StartupError(
    `the API answered ${result.response.status}: ${problem?.detail ?? problem?.code ?? 'no detail'}`,
  );
}

const plans: Plan[] = ['free', 'professional', 'enterprise'];

async function withDb<T>(fn: (knex: Knex) => Promise<T>): Promise<T> {
  const { knex } = await connectDatabase(loadConfig());
  try {
    return await fn(knex);
  } finally {
    await knex.destroy();
  }
}

async function requireWorkspace(knex: Knex, id: string | undefined) {
  if (!id) throw new UsageError('--workspace <id> is required');
  const ws = /^[0-9a-f-]{36}$/i.test(id) ? await getWorkspace(knex, id) : undefined;
  if (!ws) throw new StartupError(`no workspace ${id}`);
  return ws;
}

async function run(argv: string[]): Promise<string> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      workspace: { type: 'string' },
      scopes: { type: 'string' },
      expires: { type: 'string' },
      role: { type: 'string' },
      email: { type: 'string' },
      input: { type: 'string' },
      'input-file': { type: 'string' },
      'idempotency-key': { type: 'string' },
      key: { type: 'string' },
      url: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, command, arg, arg2] = positionals;
  if (values.help || !group) return usage;

  switch (`${group} ${command ?? ''}`.trim()) {
    case 'workspace create': {
      const plan = (values.plan ?? 'free') as Plan;
      if (!plans.includes(plan)) throw new UsageError(`--plan must be one of ${plans.join(', ')}`);
      return withDb(async (knex) => (await createWorkspace(knex, values.name ?? 'Workspace', plan)).id);
    }
    case 'workspace enable-api':
    case 'workspace disable-api':
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, arg);
        await setApiEnabled(knex, ws.id, command === 'enable-api');
        return `API access ${command === 'enable-api' ? 'enabled' : 'disabled'} for workspace ${ws.id}`;
      });
    case 'workspace set-plan':
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, arg);
        if (!plans.includes(arg2 as Plan)) throw new UsageError(`the plan must be one of ${plans.join(', ')}`);
        await setPlan(knex, ws.id, arg2 as Plan);
        return `workspace ${ws.id} is on the ${arg2} plan`;
      });
    case 'workspace invite':
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, arg);
        const role = (values.role ?? 'owner') as Role;
        if (!roles.includes(role)) throw new UsageError(`--role must be one of ${roles.join(', ')}`);
        const publicUrl = loadConfig().web.publicUrl;
        return (await createInvitation(knex, { workspaceId: ws.id, role, email: values.email, publicUrl })).url;
      });
    case 'user reset-link':
      return withDb(async (knex) => {
        const user = arg ? await findUserByEmail(knex, arg) : undefined;
        if (!user) throw new StartupError(`no account with the email ${arg ?? '(none given)'}`);
        return (await createPasswordReset(knex, user.id, loadConfig().web.publicUrl)).url;
      });
    case 'secrets rewrap':
      return withDb(async (knex) => {
        const box = loadSecretBox(loadConfig());
        let changed = 0;
        let unreadable = 0;
        for (const { table, key, column } of sealedColumns) {
          for (const row of await knex(table).whereNotNull(column).select(key, column)) {
            let rewrapped: string;
            try {
              rewrapped = box.rewrap(row[column]);
            } catch {
              unreadable++; // sealed with a key this process was not given: left as it is
              continue;
            }
            if (rewrapped === row[column]) continue;
            await knex(table)
              .where({ [key]: row[key] })
              .update({ [column]: rewrapped });
            changed++;
          }
        }
        return (
          `${changed} secret(s) re-wrapped with the current key` +
          (unreadable ? `; ${unreadable} sealed with a key not in CADRE_SECRET_KEY_PREVIOUS were left as they are` : '')
        );
      });
    case 'apikey create': {
      const requested = (values.scopes ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const bad = requested.filter((s) => !allScopes.includes(s as Scope));
      if (requested.length === 0 || bad.length > 0)
        throw new UsageError(`--scopes takes a comma-separated list of ${allScopes.join(', ')}`);
      const expiresAt = values.expires === undefined ? null : keyExpiry(values.expires);
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, values.workspace);
        return (await createApiKey(knex, ws.id, values.name ?? 'operator key', requested as Scope[], expiresAt)).key;
      });
    }
    case 'apikey revoke':
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, values.workspace);
        if (!arg || !(await revokeApiKey(knex, ws.id, arg)))
          throw new StartupError(`no active API key ${arg ?? ''} in workspace ${ws.id}`);
        return `API key ${arg} revoked`;
      });
    case 'agent import': {
      if (!arg) throw new UsageError('agent import needs the path of a JSON file');
      let json: unknown;
      try {
        json = JSON.parse(fs.readFileSync(arg, 'utf8'));
      } catch (err) {
        throw new StartupError(`cannot read ${arg}: ${(err as Error).message}`);
      }
      return withDb(async (knex) => {
        const ws = await requireWorkspace(knex, values.workspace);
        try {
          return (await createAgent(knex, ws.id, validateAgentSpec(json))).id;
        } catch (err) {
          if (err instanceof ApiError) throw new StartupError(`${arg} is not a valid agent: ${err.message}`);
          throw err;
        }
      });
    }
    case 'agent set-state': {
      const states: AgentState[] = ['live', 'paused'];
      if (!states.includes(arg2 as AgentState)) throw new UsageError('agent set-state <agent-id> live|paused');
      return withDb(async (knex) => {
        const current = /^[0-9a-f-]{36}$/i.test(arg ?? '')
          ? await knex('agents').where({ id: arg }).first()
          : undefined;
        if (!current) throw new StartupError(`no agent ${arg}`);
        const temporalConfig = loadTemporalConfig();
        const temporal = await connectTemporal(temporalConfig).catch(() => undefined);
        const deps = temporal && { temporal: temporal.client, temporalConfig };
        // Resumed: event triggers that skip what was missed start from their positions now, as through the API.
        const positions =
          deps && current.state === 'paused' && arg2 === 'live'
            ? await resumePositions(deps, await listTriggers(knex, current.id))
            : undefined;
        const agent = (await overrideAgentState(knex, current.id, arg2 as 'live' | 'paused', positions))!;
        await recordEvent(knex, {
          workspace_id: agent.workspace_id,
          agent_id: agent.id,
          kind: 'state_changed',
          message: `set ${arg2} by an operator (cadre agent set-state)`,
          details: { to: arg2 },
        });
        // Its schedules follow the state, as they do when the console or the API moves the agent.
        if (!temporal)
          return `agent ${arg} is ${arg2} (Temporal is not reachable: its schedules follow at the next start)`;
        try {
          await setSchedulesPaused(deps!, await listTriggers(knex, agent.id), agent.state);
        } finally {
          await temporal.connection.close();
        }
        return `agent ${arg} is ${arg2}`;
      });
    }
    case 'migrate':
      return withDb(async (knex) => {
        const applied = await migrate(knex);
        return applied.length ? `applied ${applied.join(', ')}` : 'the schema is up to date';
      });
    case 'run start': {
      if (!arg) throw new UsageError('run start needs the agent id');
      const input = values['input-file'] ? fs.readFileSync(values['input-file'], 'utf8') : values.input;
      if (input === undefined) throw new UsageError('give the input with --input TEXT or --input-file PATH');
      const started = await apiClient(values).POST('/agents/{id}/run', {
        params: { path: { id: arg } },
        body: { input },
        headers: values['idempotency-key'] ? { 'idempotency-key': values['idempotency-key'] } : {},
      });
      return answerOf(started).id;
    }
    case 'run get':
      if (!arg) throw new UsageError('run get needs the run id');
      return JSON.stringify(
        answerOf(await apiClient(values).GET('/runs/{id}', { params: { path: { id: arg } } })),
        null,
        2,
      );
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"\n${usage}`);
  }
}

main('cadre', async () => {
  try {
    console.log(await run(process.argv.slice(2)));
  } catch (err) {
    if (err instanceof TypeError && (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS'))
      throw new UsageError(err.message);
    throw err;
  }
});
