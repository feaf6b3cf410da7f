// The agent creation wizard (spec §1.11), five steps over one wizard session of the API: the goal (and files),
// clarifying questions, the instructions' six parts, the integrations they need, then the workflow, a test run
// and Ready. The session id (and the step shown) travel in the URL, so each step is a plain form action and the
// page can be reloaded or shared at any step.
import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { agentsApi } from '$lib/server/agents-api';
import { api } from '$lib/server/api';
import { connectionsApi } from '$lib/server/connections-api';
import { wizardApi, type InstructionParts } from '$lib/server/wizard-api';
import type { Actions, PageServerLoad } from './$types';

const partNames = [
  'job',
  'success_criteria',
  'edge_cases',
  'triggers',
  'tools',
  'runtime_parameters',
] as const satisfies readonly (keyof InstructionParts)[];

export const load: PageServerLoad = async ({ url }) => {
  const starters = await wizardApi.starters();
  const id = url.searchParams.get('session');
  if (!id)
    return {
      starters,
      session: null,
      step: 1,
      connections: [],
      connectors: [],
      agent: null,
      run: null,
      sameName: false,
      problem: null,
    };
  const session = await wizardApi.get(id);
  const [connections, connectors] = await Promise.all([connectionsApi.list(), connectionsApi.connectors()]);
  const agent = session.agent_id ? await api.getAgent(session.agent_id) : null;
  const runId = url.searchParams.get('run');
  const run = runId ? await api.getRun(runId) : null;
  const reached = session.spec || agent ? 5 : session.instructions ? 3 : 2;
  const asked = Number(url.searchParams.get('step'));
  const step = asked >= 1 && asked <= 5 ? asked : reached;
  // Before the agent is made: a warning (not a refusal) when another agent already has the generated name.
  const sameName = step === 5 && session.spec && !agent ? await agentsApi.named(session.spec.name) : false;
  return {
    starters,
    session,
    step,
    connections,
    connectors,
    agent,
    run,
    sameName,
    problem: url.searchParams.get('problem'),
  };
};

/** The API call behind a step; its refusal comes back to the form as a notice, success moves to `to`. */
async function stepping(call: () => Promise<string>) {
  let to: string;
  try {
    to = await call();
  } catch (e) {
    if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message });
    throw e;
  }
  redirect(303, to);
}

const at = (session: string, step: number, extra = '') => `/agents/new?session=${session}&step=${step}${extra}`;

export const actions: Actions = {
  start: async ({ request }) => {
    const form = await request.formData();
    const goal = formText(form, 'goal');
    if (!goal) return fail(400, { ok: false, message: 'Describe what the agent should do.', goal });
    const files = form.getAll('files').filter((f): f is File => f instanceof File && f.size > 0);
    const { model } = await wizardApi.starters();
    return stepping(async () => {
      const session = await wizardApi.start(goal, files);
      // With a model the questions come at once; without one, step 2 offers the starters instead. The session
      // exists either way: when the model fails, step 2 says why and offers to ask again.
      if (model.available) {
        try {
          await wizardApi.questions(session.id);
        } catch (e) {
          if (!isHttpError(e)) throw e;
          return at(session.id, 2, `&problem=${encodeURIComponent(e.body.message)}`);
        }
      }
      return at(session.id, 2);
    });
  },

  questions: async ({ request }) => {
    const session = formText(await request.formData(), 'session');
    return stepping(async () => {
      await wizardApi.questions(session);
      return at(session, 2);
    });
  },

  answers: async ({ request }) => {
    const form = await request.formData();
    const session = formText(form, 'session');
    const answers = form.getAll('answer').map((a) => (typeof a === 'string' ? a.trim() : ''));
    return stepping(async () => {
      await wizardApi.answer(session, answers);
      return at(session, 3);
    });
  },

  instructions: async ({ request }) => {
    const form = await request.formData();
    const session = formText(form, 'session');
    const parts = Object.fromEntries(partNames.map((p) => [p, formText(form, p)])) as InstructionParts;
    if (!parts.job) return fail(400, { ok: false, message: 'Say what the job is: the instructions need it.' });
    return stepping(async () => {
      await wizardApi.editInstructions(session, parts);
      return at(session, 4);
    });
  },

  workflow: async ({ request }) => {
    const form = await request.formData();
    const session = formText(form, 'session');
    const starter = formText(form, 'starter') || undefined;
    return stepping(async () => {
      await wizardApi.buildWorkflow(session, starter);
      return at(session, 5);
    });
  },

  create: async ({ request }) => {
    const session = formText(await request.formData(), 'session');
    return stepping(async () => {
      await wizardApi.createAgent(session);
      return at(session, 5);
    });
  },

  test: async ({ request }) => {
    const form = await request.formData();
    const session = formText(form, 'session');
    const agent = formText(form, 'agent');
    // Not trimmed: the input is data; the browser's CRLF line breaks become the LF the person saw.
    const raw = form.get('input');
    const input = typeof raw === 'string' ? raw.replace(/\r\n/g, '\n') : '';
    return stepping(async () => {
      const run = await api.startRun(agent, input, 'test-run');
      return at(session, 5, `&run=${run.id}`);
    });
  },

  ready: async ({ request }) => {
    const form = await request.formData();
    const [session, agent, run] = ['session', 'agent', 'run'].map((k) => formText(form, k));
    return stepping(async () => {
      await api.setAgentState(agent, 'ready');
      return at(session, 5, run ? `&run=${run}` : '');
    });
  },
};
