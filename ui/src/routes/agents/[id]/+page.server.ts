import { fail, redirect } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { api } from '$lib/server/api';
import type { ActionOutcome, AgentState } from '$lib/types';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const [agent, runs] = await Promise.all([api.getAgent(params.id), api.listRuns({ agent_id: params.id, limit: 10 })]);
  return { agent, runs: runs.data, moreRuns: runs.next_cursor != null };
};

const TARGETS: Record<string, AgentState> = { draft: 'draft', ready: 'ready', live: 'live', paused: 'paused' };
const DONE: Record<AgentState, string> = {
  draft: 'Back in draft.',
  ready: 'Marked ready.',
  live: 'The agent is live.',
  paused: 'Paused: no scheduled or triggered runs until it is resumed.',
};

export const actions: Actions = {
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
