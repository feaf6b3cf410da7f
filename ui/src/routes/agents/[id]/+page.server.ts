import { error, fail, isHttpError, redirect } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { api } from '$lib/server/api';
import { triggersApi, type TriggerBody } from '$lib/server/triggers-api';
import { agentsApi } from '$lib/server/agents-api';
import { connectionsApi, type Connection } from '$lib/server/connections-api';
import { fieldGroups, readFields } from '$lib/schema-form';
import { jsonInputProblem } from '../../../../../model/json-slip';
import {
  checkSchedule,
  problemsFromApi,
  scheduleFromFields,
  type ScheduleProblems,
  type ScheduleRequest,
} from '$lib/schedule-check';
import type { AgentState } from '$lib/api-types';
import type { ActionOutcome } from '$lib/action-outcome';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const [agent, runs, triggers, timeline, agents, runLinks, state, connections, connectors] = await Promise.all([
    api.getAgent(params.id),
    api.listRuns({ agent_id: params.id, limit: 10 }),
    triggersApi.list(params.id),
    triggersApi.timeline(params.id),
    api.listAgents({ limit: 500 }), // the agents a chain trigger can follow
    agentsApi.runLinks(params.id),
    agentsApi.stateStore(params.id),
    connectionsApi.list(), // what an event trigger can watch
    connectionsApi.connectors(), // what could be connected for one
  ]);
  return {
    agent,
    runs: runs.data,
    moreRuns: runs.next_cursor != null,
    triggers: triggers.data,
    runLinks: runLinks.filter((l) => !l.revoked_at),
    state,
    timeline: timeline.data,
    // Agents this one can be chained after.
    otherAgents: agents.data.filter((a) => a.id !== params.id).map((a) => ({ id: a.id, name: a.name })),
    eventSources: eventSourcesOf(connections),
    eventConnectors: connectors
      .filter((c) => c.events.length > 0)
      .map((c) => ({ label: c.label, events: c.events.map((e) => e.description.replace(/\.$/, '')) })),
  };
};

/** Each connection's events, as the event trigger builder offers them ("connection|event"). */
function eventSourcesOf(connections: Connection[]) {
  return connections.flatMap((c) =>
    c.events.map((e) => ({
      value: `${c.name}|${e.name}`,
      connection: c.name,
      event: e.name,
      description: e.description,
      options_schema: e.options_schema,
    })),
  );
}

const FIELD_TYPES = ['text', 'textarea', 'number', 'email', 'date', 'select', 'checkbox'] as const;
const isFieldType = (t: string): t is (typeof FIELD_TYPES)[number] => (FIELD_TYPES as readonly string[]).includes(t);

/**
 * One line of the form builder, "Label, type, required" or "Category, select: travel / meals": the API checks
 * the result and names what is wrong.
 */
function formFieldFromLine(line: string) {
  const [label, typePart = 'text', ...flags] = line.split(',').map((p) => p.trim());
  const [type, optionText] = typePart.split(':').map((p) => p.trim());
  const name =
    label
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .replace(/^(\d)/, 'f_$1') || 'field';
  return {
    name,
    label,
    type: isFieldType(type) ? type : 'text',
    required: flags.includes('required'),
    ...(optionText
      ? {
          options: optionText
            .split('/')
            .map((o) => o.trim())
            .filter(Boolean),
        }
      : {}),
  };
}

/** The builder's fields as sent, to show them again as they were typed (after a preview, or a refused add). */
const draftOf = (form: FormData): Record<string, string> =>
  Object.fromEntries([...form.entries()].filter((e): e is [string, string] => typeof e[1] === 'string'));

/**
 * A schedule from the builder, checked as the browser checks it before it is sent (so a page without JavaScript
 * gets the same words), then sent. Refused, the builder shows what was typed with each problem at its field: the
 * API's problem names the field by its path (what only the server knows: a cron Temporal cannot run, an input the
 * agent's input node cannot read). The builder keeps what was typed in every case.
 */
async function sendSchedule(form: FormData, what: string, send: (request: ScheduleRequest) => Promise<string>) {
  const request = scheduleFromFields(form);
  const draft = draftOf(form);
  const refused = (status: number, problems: ScheduleProblems) =>
    fail(status, {
      ok: false,
      message: `The schedule was not ${what}: see what to change in the schedule builder.`,
      problems,
      draft,
    });
  const found = checkSchedule(request);
  if (Object.keys(found).length > 0) return refused(422, found);
  try {
    return { ok: true, message: await send(request), draft };
  } catch (e) {
    if (!isHttpError(e)) throw e;
    if (e.status === 422)
      return refused(422, e.body.errors?.length ? problemsFromApi(e.body.errors, request) : { type: e.body.message });
    return fail(e.status, { ok: false, message: e.body.message, draft });
  }
}

/**
 * The run a schedule's "Run now" opened. Temporal starts it a moment after the fire is accepted, so the API cannot
 * name it in its answer; the console looks for it briefly (null: not started yet, or the overlap policy skipped it).
 */
async function scheduledRunAfter(agentId: string, triggerId: string, since: Date): Promise<string | null> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const runs = await api.listRuns({ agent_id: agentId, trigger: 'schedule', from: since.toISOString(), limit: 20 });
    const run = runs.data.find((r) => 'trigger_id' in r && r.trigger_id === triggerId);
    if (run) return run.id;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type Conditions = NonNullable<Extract<TriggerBody, { kind: 'webhook' }>['filter']>;
type Operator = Extract<Conditions, { op: unknown }>['op'];

/**
 * The webhook builder's filter (one condition; no field: none) and micro-batching. A value is read as JSON when it
 * is (a number, true, false), else as the text typed; the API checks the rest and names what is wrong.
 */
function webhookFromForm(form: FormData): Omit<Extract<TriggerBody, { kind: 'webhook' }>, 'kind'> {
  const field = formText(form, 'filter_field');
  const op = (formText(form, 'filter_op') || 'equals') as Operator;
  const typed = formText(form, 'filter_value');
  let value: unknown = typed;
  try {
    value = typed === '' ? typed : JSON.parse(typed);
  } catch {
    // plain text: compared as typed
  }
  const withValue = op === 'exists' || op === 'not_exists' ? {} : { value };
  return {
    ...(field ? { filter: { field, op, ...withValue } } : {}),
    ...(form.get('batch') === 'on'
      ? {
          batch: {
            max_wait_ms: Math.round(Number(formText(form, 'batch_wait_seconds') || 60) * 1000),
            max_items: Number(formText(form, 'batch_max_items') || 100),
          },
        }
      : {}),
  };
}

/** The agent's input node reads this input as JSON: its format says so, or `auto` sees a list or an object. */
function readsJson(node: { kind: string; format?: unknown } | undefined, input: string): boolean {
  if (node?.kind !== 'input') return false;
  return node.format === 'json' || node.format === 'files' || (node.format === 'auto' && /^\s*[[{]/.test(input));
}

const TARGETS: Record<string, AgentState> = { draft: 'draft', ready: 'ready', live: 'live', paused: 'paused' };
const DONE: Record<AgentState, string> = {
  draft: 'Back in draft.',
  ready: 'Marked ready.',
  live: 'The agent is live.',
  paused: 'Paused: no scheduled or triggered runs until it is resumed.',
};

export const actions: Actions = {
  previewSchedule: async ({ request }) => {
    const form = await request.formData();
    let preview: Awaited<ReturnType<typeof triggersApi.preview>> | undefined;
    const outcome = await sendSchedule(form, 'previewed', async (schedule) => {
      preview = await triggersApi.preview(schedule);
      return `Fires ${preview.description}.`;
    });
    return 'status' in outcome ? outcome : { ...outcome, preview };
  },

  addSchedule: async ({ params, request }) =>
    sendSchedule(await request.formData(), 'added', async (schedule) => {
      const t = await triggersApi.create(params.id, { kind: 'schedule', ...schedule });
      return `Schedule added: ${t.schedule?.description}.`;
    }),

  addWebhook: async ({ params, request }) => {
    const form = await request.formData();
    let revealed: { trigger_id: string; secret: string } | undefined;
    const outcome = await attempt(async () => {
      const t = await triggersApi.create(params.id, { kind: 'webhook', ...webhookFromForm(form) });
      revealed = { trigger_id: t.id, secret: t.secret ?? '' };
      return 'Webhook added: copy its signing secret below, it is shown this once.';
    });
    return 'status' in outcome ? outcome : { ...outcome, revealed };
  },

  addForm: async ({ params, request }) => {
    const form = await request.formData();
    const fields = formText(form, 'fields')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .map(formFieldFromLine);
    return attempt(async () => {
      const t = await triggersApi.create(params.id, { kind: 'form', title: formText(form, 'title'), fields });
      return `Form published at ${t.form?.url}.`;
    });
  },

  addChain: async ({ params, request }) => {
    const form = await request.formData();
    const statuses = (['completed', 'failed', 'needs_review', 'cancelled'] as const).filter(
      (s) => form.get(`on_${s}`) === 'on',
    );
    return attempt(async () => {
      const t = await triggersApi.create(params.id, {
        kind: 'chain',
        source_agent_id: formText(form, 'source_agent_id'),
        on_statuses: statuses.length ? statuses : ['completed'],
      });
      return `Chain added: ${t.name}.`;
    });
  },

  addEvent: async ({ params, request }) => {
    const form = await request.formData();
    const [connection, event] = formText(form, 'source').split('|');
    const source = eventSourcesOf(await connectionsApi.list()).find(
      (s) => s.connection === connection && s.event === event,
    );
    if (!source) return fail(400, { ok: false, message: 'Choose what to wait for.' } satisfies ActionOutcome);
    return attempt(async () => {
      const interval = Number(formText(form, 'poll_interval_seconds') || 60);
      const t = await triggersApi.create(params.id, {
        kind: 'event',
        connection,
        event,
        options: readFields(form, fieldGroups(source.options_schema, 'options')),
        poll_interval_seconds: interval,
        on_resume: formText(form, 'on_resume') === 'deliver_missed' ? 'deliver_missed' : 'skip_missed',
      });
      return `Event trigger added: ${t.name}.`;
    });
  },

  removeTrigger: async ({ request }) => {
    const id = formText(await request.formData(), 'trigger_id');
    return attempt(async () => {
      await triggersApi.remove(id);
      return 'Trigger removed.';
    });
  },

  fireTrigger: async ({ params, request }) => {
    const id = formText(await request.formData(), 'trigger_id');
    let fired: { trigger_id: string; run_id: string | null } | undefined;
    const outcome = await attempt(async () => {
      const since = new Date(Date.now() - 5_000); // the API's clock may be a little behind the console's
      await triggersApi.fire(id);
      fired = { trigger_id: id, run_id: await scheduledRunAfter(params.id, id, since) };
      return fired.run_id ? 'Schedule fired: its run has started.' : 'Schedule fired: a run is starting.';
    });
    return 'status' in outcome ? outcome : { ...outcome, fired };
  },

  createRunLink: async ({ params }) =>
    attempt(async () => {
      const link = await agentsApi.createRunLink(params.id);
      return `Run Mode link (copy it now, it is shown once): ${link.url}${link.warning ? ` (${link.warning})` : ''}`;
    }),

  revokeRunLink: async ({ request }) => {
    const id = formText(await request.formData(), 'link_id');
    return attempt(async () => {
      await agentsApi.revokeRunLink(id);
      return 'Link revoked: it opens nothing any more.';
    });
  },

  deleteState: async ({ params, request }) => {
    const key = formText(await request.formData(), 'key');
    return attempt(async () => {
      await agentsApi.deleteState(params.id, key);
      return `Removed "${key}" from the state store.`;
    });
  },

  rotateSecret: async ({ request }) => {
    const id = formText(await request.formData(), 'trigger_id');
    let revealed: { trigger_id: string; secret: string } | undefined;
    const outcome = await attempt(async () => {
      const t = await triggersApi.rotateSecret(id);
      revealed = { trigger_id: id, secret: t.secret ?? '' };
      return 'New signing secret made: copy it below, it is shown this once. The old one no longer signs.';
    });
    return 'status' in outcome ? outcome : { ...outcome, revealed };
  },

  state: async ({ params, request }) => {
    const target = TARGETS[formText(await request.formData(), 'state')];
    if (!target) return fail(400, { ok: false, message: 'Unknown state.' } satisfies ActionOutcome);
    return attempt(async () => {
      await api.setAgentState(params.id, target);
      return DONE[target];
    });
  },

  run: async ({ params, request }) => {
    // Not trimmed: the input is data. Browsers send a textarea's line breaks as CRLF whatever was typed, so they
    // are turned back into the LF the user saw.
    const raw = (await request.formData()).get('input');
    const input = typeof raw === 'string' ? raw.replace(/\r\n/g, '\n') : '';
    // The state is read now, not taken from the form, so a page left open while someone paused the agent
    // cannot start a real run by mistake.
    let runId = '';
    const outcome = await attempt(async () => {
      const agent = await api.getAgent(params.id);
      // JSON is checked here first, to say where it goes wrong as a person counts (the API repeats its parser's
      // words, "Unexpected token … at position 12").
      const slip = readsJson(agent.spec?.nodes[0], input) ? jsonInputProblem(input) : null;
      if (slip) error(422, slip);
      const run = await api.startRun(params.id, input, agent.state === 'live' ? 'manual-run' : 'test-run');
      runId = run.id;
      return 'Run started.';
    });
    if (runId) redirect(303, `/runs/${runId}`);
    // Refused: the input comes back as typed, for a page without JavaScript too.
    return 'status' in outcome ? fail(outcome.status, { ...outcome.data, input }) : outcome;
  },
};
