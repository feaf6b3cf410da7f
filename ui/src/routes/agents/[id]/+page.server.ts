import { fail, redirect } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { api } from '$lib/server/api';
import { triggersApi, type ScheduleBody, type TriggerBody } from '$lib/server/triggers-api';
import { agentsApi } from '$lib/server/agents-api';
import { connectionsApi, type Connection } from '$lib/server/connections-api';
import { fieldGroups, readFields } from '$lib/schema-form';
import { scheduleProblem } from '$lib/schedule-problems';
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

const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
type IntervalUnit = Extract<ScheduleBody['schedule'], { type: 'interval' }>['unit'];

/** The builder's fields as sent, to show them again as they were typed (after a preview, or a refused add). */
const draftOf = (form: FormData): Record<string, string> =>
  Object.fromEntries([...form.entries()].filter((e): e is [string, string] => typeof e[1] === 'string'));

type InputFormat = NonNullable<ScheduleBody['input_format']>;
const INPUT_FORMATS: readonly string[] = ['text', 'csv', 'json'] satisfies InputFormat[];

/**
 * The schedule builder's fields as the API's schedule trigger body. The unit and overlap come from the
 * builder's selects; the API refuses any other value (422) and the refusal is the form's notice. The input goes
 * as typed (not trimmed: it is data); none, or nothing typed, sends no input.
 */
function scheduleFromForm(form: FormData): ScheduleBody {
  const inputFormat = formText(form, 'input_format');
  const input = form.get('input');
  const withInput =
    INPUT_FORMATS.includes(inputFormat) && typeof input === 'string' && input.trim() !== ''
      ? { input, input_format: inputFormat as InputFormat }
      : {};
  const type = formText(form, 'type');
  const at = formText(form, 'at');
  const schedule: ScheduleBody['schedule'] =
    type === 'interval'
      ? { type, every: Number(formText(form, 'every')), unit: formText(form, 'unit') as IntervalUnit }
      : type === 'weekly'
        ? { type, at, days: WEEKDAYS.filter((d) => form.get(`day_${d}`) === 'on') }
        : type === 'monthly'
          ? { type, at, day: Number(formText(form, 'day')) }
          : type === 'cron'
            ? { type, expression: formText(form, 'expression') }
            : { type: 'daily', at };
  return {
    schedule,
    timezone: formText(form, 'timezone') || 'UTC',
    overlap: (formText(form, 'overlap') || 'skip') as ScheduleBody['overlap'],
    catchup_window_seconds: Number(formText(form, 'catchup')) || 300,
    ...withInput,
  };
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
    const outcome = await attempt(async () => {
      preview = await triggersApi.preview(scheduleFromForm(form));
      return `Fires ${preview.description}.`;
    });
    const draft = draftOf(form);
    if ('status' in outcome)
      return fail(outcome.status, { ...outcome.data, message: scheduleProblem(outcome.data.message), draft });
    return { ...outcome, preview, draft };
  },

  addSchedule: async ({ params, request }) => {
    const form = await request.formData();
    const body: TriggerBody = { kind: 'schedule', ...scheduleFromForm(form) };
    const outcome = await attempt(async () => {
      const t = await triggersApi.create(params.id, body);
      return `Schedule added: ${t.schedule?.description}.`;
    });
    // Refused: the builder shows what was typed again, with the reason.
    return 'status' in outcome
      ? fail(outcome.status, { ...outcome.data, message: scheduleProblem(outcome.data.message), draft: draftOf(form) })
      : outcome;
  },

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
      const run = await api.startRun(params.id, input, agent.state === 'live' ? 'manual-run' : 'test-run');
      runId = run.id;
      return 'Run started.';
    });
    if (runId) redirect(303, `/runs/${runId}`);
    return outcome;
  },
};
