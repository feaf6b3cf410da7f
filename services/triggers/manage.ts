// Saving and showing triggers: checks a trigger before it is stored (valid schedule, chain source in the same
// workspace and no chain cycle), keeps the Temporal schedule in step with the record, and writes the
// agent's timeline.
import type { Knex } from 'knex';
import { InputError, parseInput } from '../../model/input-parsing';
import { getAgent, getVersion, type AgentRow } from '../../db/agents';
import type { SecretBox } from '../../db/secret-box';
import { recordEvent } from '../../db/timeline';
import { chainEdges, deleteTrigger, insertTrigger, updateTrigger, type TriggerRow } from '../../db/triggers';
import {
  chainConfigSchema,
  formConfigSchema,
  scheduleConfigSchema,
  triggerInputSchema,
  eventConfigSchema,
  scheduleInputOf,
  type EventConfig,
  type ScheduleConfig,
  type TriggerInput,
} from '../../model/trigger';
import { ApiError } from '../errors';
import { describePolicies, describeSchedule, ScheduleError } from '../../schedules/spec';
import { evaluateSchedule, scheduledFireTimes } from '../../schedules/fire-times';
import { deleteSchedule, isScheduled, scheduleIdOf, upsertSchedule, type ScheduleSyncDeps } from '../../schedules/sync';
import { connectionByName } from '../../db/connections';
import { eventsOf } from '../../model/connectors/events';
import type { Links } from '../runs/json';
import { parseBody } from '../validation';
import { newWebhookSecret } from './webhook-signature';

export interface TriggerServiceDeps extends ScheduleSyncDeps {
  knex: Knex;
  secrets: SecretBox;
  links: Links;
}

/** The trigger's settings as stored: everything of the input but its kind and name. */
function configOf(input: TriggerInput): Record<string, unknown> {
  const { kind: _kind, name: _name, ...config } = input;
  return config;
}

async function defaultName(deps: TriggerServiceDeps, input: TriggerInput, workspaceId: string): Promise<string> {
  if (input.name) return input.name;
  switch (input.kind) {
    case 'schedule':
      return describeSchedule(input);
    case 'webhook':
      return 'Webhook';
    case 'form':
      return input.title;
    case 'chain': {
      const source = await getAgent(deps.knex, workspaceId, input.source_agent_id);
      return `When ${source?.name ?? 'another agent'} finishes`;
    }
    case 'event':
      return `${input.event} on ${input.connection}`;
  }
}

/** The connection exists in the workspace, offers the event, and the event's options are valid (normalized). */
async function checkEvent(deps: TriggerServiceDeps, agent: AgentRow, input: EventConfig): Promise<EventConfig> {
  const connection = await connectionByName(deps.knex, agent.workspace_id, input.connection);
  if (!connection)
    throw new ApiError(
      422,
      'unknown_connection',
      `the workspace has no connection "${input.connection}": connect it in Integrations first`,
    );
  const events = eventsOf(connection.kind);
  const source = events[input.event];
  if (!source) {
    const offered = Object.keys(events);
    throw new ApiError(
      422,
      'unknown_event',
      `connection "${input.connection}" (${connection.kind}) has no event "${input.event}"; ${offered.length > 0 ? `it offers ${offered.join(', ')}` : 'it offers none'}`,
    );
  }
  const options = source.options.safeParse(input.options);
  if (!options.success)
    throw new ApiError(
      422,
      'invalid_event_options',
      `options of ${input.event}: ${options.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`).join('; ')}`,
    );
  return { ...input, options: options.data as Record<string, unknown> };
}

/**
 * The schedule's next fire times as Temporal evaluates it; 422 when Temporal cannot run it as written, or it never
 * fires. The preview and saving both come through here, so they accept and refuse the same schedules.
 */
export async function checkedFireTimes(deps: Pick<TriggerServiceDeps, 'temporal'>, config: ScheduleConfig) {
  try {
    return await evaluateSchedule(deps.temporal, config);
  } catch (err) {
    // Named by the field it is about, as parseBody names a schema's problems: the builder shows it there.
    if (err instanceof ScheduleError)
      throw new ApiError(
        422,
        err.code,
        err.message,
        {},
        { errors: [{ path: schedulePath(config), message: err.message }] },
      );
    throw err;
  }
}

/** Where in the body a schedule Temporal refuses goes wrong: a cron's expression, or the schedule as a whole. */
const schedulePath = (config: ScheduleConfig) => (config.schedule.type === 'cron' ? 'schedule.expression' : 'schedule');

const unreadable = (message: string) =>
  new ApiError(422, 'input_unparseable', message, {}, { errors: [{ path: 'input', message }] });

/** A schedule's input is what it says it is (CSV, JSON); 422 otherwise. Text is anything. */
export function checkScheduleInputFormat(config: ScheduleConfig) {
  const input = scheduleInputOf(config);
  if (input === null || config.input_format === 'text') return;
  try {
    parseInput({ kind: 'input', id: 'schedule', format: config.input_format }, input);
  } catch (err) {
    if (err instanceof InputError)
      throw unreadable(`the schedule's input is not ${config.input_format.toUpperCase()}: ${err.message}`);
    throw err;
  }
}

/**
 * A schedule's input is what it says it is and what the agent's input node can read, as a run started by hand with
 * it would be checked: a schedule whose every fire would fail is refused when saved (422).
 */
async function checkScheduleInput(deps: TriggerServiceDeps, agent: AgentRow, config: ScheduleConfig) {
  checkScheduleInputFormat(config);
  const input = scheduleInputOf(config);
  if (input === null) return; // each run is one empty item, which every input node takes
  const spec = await getVersion(deps.knex, agent.id, agent.current_version);
  const node = spec?.nodes[0];
  if (node?.kind !== 'input') return;
  try {
    parseInput(node, input);
  } catch (err) {
    if (err instanceof InputError)
      throw unreadable(`the agent's input node (${node.format}) cannot read the schedule's input: ${err.message}`);
    throw err;
  }
}

/** Validates a trigger body for `agent`; 422 names what is wrong. */
export async function parseTriggerInput(
  deps: TriggerServiceDeps,
  agent: AgentRow,
  body: unknown,
): Promise<TriggerInput> {
  const input = parseBody(triggerInputSchema, body);
  if (input.kind === 'schedule') {
    await checkedFireTimes(deps, input);
    await checkScheduleInput(deps, agent, input);
    return { ...input, input: scheduleInputOf(input) };
  }
  if (input.kind === 'chain') await checkChain(deps, agent, input.source_agent_id);
  if (input.kind === 'event') return { ...(await checkEvent(deps, agent, input)), kind: 'event', name: input.name };
  return input;
}

/** The source agent exists in the workspace, and the new edge source → agent closes no cycle. */
async function checkChain(deps: TriggerServiceDeps, agent: AgentRow, sourceId: string, replacing?: string) {
  const source = await getAgent(deps.knex, agent.workspace_id, sourceId);
  if (!source)
    throw new ApiError(422, 'chain_source_not_found', `no agent ${sourceId} in this workspace to chain from`);
  const edges = (await chainEdges(deps.knex, agent.workspace_id)).filter((e) => e.id !== replacing);
  edges.push({ id: 'new', from: source.id, to: agent.id });
  const path = cyclePath(edges, agent.id);
  if (path) {
    const names = new Map<string, string>();
    for (const id of new Set(path)) names.set(id, (await getAgent(deps.knex, agent.workspace_id, id))?.name ?? id);
    throw new ApiError(
      422,
      'chain_cycle',
      `this chain would make agents start each other in a loop: ${path.map((id) => names.get(id)).join(' → ')}`,
      {},
      { cycle: path },
    );
  }
}

/** A path start → … → start through the edges, if there is one (depth-first). */
function cyclePath(edges: { from: string; to: string }[], start: string): string[] | undefined {
  const out = new Map<string, string[]>();
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  const seen = new Set<string>();
  const walk = (node: string, path: string[]): string[] | undefined => {
    for (const next of out.get(node) ?? []) {
      if (next === start) return [...path, next];
      if (seen.has(next)) continue;
      seen.add(next);
      const found = walk(next, [...path, next]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(start, [start]);
}

export async function createTrigger(
  deps: TriggerServiceDeps,
  agent: AgentRow,
  input: TriggerInput,
): Promise<{ trigger: TriggerRow; secret?: string }> {
  const secret = input.kind === 'webhook' ? newWebhookSecret() : undefined;
  // Read before the transaction: the embedded database serves one transaction at a time, so a read on
  // another connection inside it would wait for it forever.
  const name = await defaultName(deps, input, agent.workspace_id);
  const trigger = await deps.knex.transaction(async (trx) => {
    const row = await insertTrigger(trx, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind: input.kind,
      name,
      config: configOf(input),
      secret_encrypted: secret ? deps.secrets.seal(secret) : null,
      source_agent_id: input.kind === 'chain' ? input.source_agent_id : null,
    });
    // The schedule is created inside the transaction: if Temporal refuses it, no trigger is saved.
    if (isScheduled(row)) await upsertSchedule(deps, row, agent.state);
    await recordEvent(trx, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind: 'trigger_added',
      trigger_id: row.id,
      message: `${row.kind} trigger added: ${row.name}`,
      details: { kind: row.kind },
    });
    return row;
  });
  return { trigger, secret };
}

export async function changeTrigger(
  deps: TriggerServiceDeps,
  agent: AgentRow,
  trigger: TriggerRow,
  input: TriggerInput,
): Promise<TriggerRow> {
  if (input.kind !== trigger.kind) {
    throw new ApiError(
      422,
      'trigger_kind_fixed',
      `this is a ${trigger.kind} trigger; its kind cannot change (delete it and add a ${input.kind} trigger)`,
    );
  }
  if (input.kind === 'chain') await checkChain(deps, agent, input.source_agent_id, trigger.id);
  const name = await defaultName(deps, input, agent.workspace_id);
  return deps.knex.transaction(async (trx) => {
    const row = await updateTrigger(trx, trigger.id, {
      name,
      config: configOf(input),
      source_agent_id: input.kind === 'chain' ? input.source_agent_id : null,
    });
    if (isScheduled(row)) await upsertSchedule(deps, row, agent.state);
    await recordEvent(trx, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind: 'trigger_changed',
      trigger_id: row.id,
      message: `${row.kind} trigger changed: ${row.name}`,
      details: { kind: row.kind },
    });
    return row;
  });
}

export async function removeTrigger(deps: TriggerServiceDeps, agent: AgentRow, trigger: TriggerRow): Promise<void> {
  await deps.knex.transaction(async (trx) => {
    await deleteTrigger(trx, trigger.id);
    if (isScheduled(trigger)) await deleteSchedule(deps, trigger);
    await recordEvent(trx, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind: 'trigger_removed',
      trigger_id: trigger.id,
      message: `${trigger.kind} trigger removed: ${trigger.name}`,
      details: { kind: trigger.kind },
    });
  });
}

/** A schedule as people read it: description, policies and its next five fire times (Temporal's). */
export function scheduleView(config: unknown, nextFireTimes: Date[]) {
  const schedule = scheduleConfigSchema.parse(config);
  return {
    description: describeSchedule(schedule),
    policies: describePolicies(schedule),
    timezone: schedule.timezone,
    next_fire_times: nextFireTimes.map((d) => d.toISOString()),
  };
}

/** A trigger as the API answers it; a schedule's next fire times are asked of Temporal (none if it has lost it). */
export async function triggerJson(
  deps: Pick<TriggerServiceDeps, 'links' | 'temporal'>,
  trigger: TriggerRow,
  agent: AgentRow,
) {
  const base = deps.links.publicUrl;
  const paused = agent.state !== 'live';
  const scheduleId = scheduleIdOf(trigger);
  const fireTimes = trigger.kind === 'schedule' ? ((await scheduledFireTimes(deps.temporal, scheduleId)) ?? []) : [];
  const view = (() => {
    switch (trigger.kind) {
      case 'schedule':
        return { schedule: { schedule_id: scheduleId, paused, ...scheduleView(trigger.config, fireTimes) } };
      case 'webhook':
        return {
          webhook: {
            url: `${base}/v1/hooks/${trigger.id}`,
            signing: 'Standard Webhooks: headers webhook-id, webhook-timestamp, webhook-signature (v1, HMAC-SHA256)',
            replay_window_seconds: 300,
          },
        };
      case 'form':
        return {
          form: {
            url: `${base}/forms/${trigger.id}`,
            definition_url: `${base}/v1/forms/${trigger.id}`,
            fields: formConfigSchema.parse(trigger.config).fields,
          },
        };
      case 'chain':
        return { chain: chainConfigSchema.parse(trigger.config) };
      case 'event': {
        const config = eventConfigSchema.parse(trigger.config);
        // Its poller is a Temporal Schedule like a schedule trigger's, paused while the agent is not live.
        return {
          event: {
            poller_schedule_id: scheduleId,
            paused,
            description: `polls ${config.connection} for ${config.event} every ${config.poll_interval_seconds} s`,
          },
        };
      }
    }
  })();
  return {
    id: trigger.id,
    agent_id: trigger.agent_id,
    kind: trigger.kind,
    name: trigger.name,
    config: trigger.config,
    // Triggers fire only while the agent is live.
    active: !paused,
    created_at: trigger.created_at,
    updated_at: trigger.updated_at,
    ...view,
  };
}
