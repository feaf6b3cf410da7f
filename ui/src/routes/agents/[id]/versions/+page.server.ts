// An agent's version history: every saved version, what changed between any two, and restoring an old one
// (which saves it again as the newest version).
import { attempt, formText } from '$lib/server/actions';
import { api } from '$lib/server/api';
import { versionsApi } from '$lib/server/versions-api';
import { runControlApi } from '$lib/server/run-control-api';
import { redirect } from '@sveltejs/kit';
import type { SpecNode } from '$lib/api-types';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, url }) => {
  const [agent, versions] = await Promise.all([api.getAgent(params.id), versionsApi.list(params.id)]);
  const newest = agent.current_version;
  const to = Number(url.searchParams.get('to')) || newest;
  const from = Number(url.searchParams.get('from')) || Math.max(1, to - 1);
  const [diff, shown, before] = await Promise.all([
    from !== to ? versionsApi.diff(params.id, from, to) : { from, to, changes: [] },
    // The workflow of the version compared to, drawn above its changes.
    versionsApi.get(params.id, to),
    // Its nodes' names, for a change to a node the newer version no longer has.
    from !== to ? versionsApi.get(params.id, from) : null,
  ]);
  const ids = (spec: { nodes?: unknown } | undefined) =>
    ((spec?.nodes ?? []) as SpecNode[]).map((n) => (typeof n?.id === 'string' ? n.id : ''));
  return {
    agent,
    versions: versions.data,
    diff,
    nodes: (shown.spec.nodes ?? []) as SpecNode[],
    nodeIds: { to: ids(shown.spec), from: ids(before?.spec) },
  };
};

export const actions: Actions = {
  // A test of the version on the agent's last 20 settled items, in test mode; its comparison page shows the result.
  testOnPastItems: async ({ params, request }) => {
    const version = Number(formText(await request.formData(), 'version'));
    let started: { id: string } | undefined;
    const outcome = await attempt(async () => {
      started = await runControlApi.testOnPastItems(params.id, version);
      return '';
    });
    if (started) redirect(303, `/agents/${params.id}/test-runs/${started.id}`);
    return outcome;
  },
  restore: async ({ params, request }) => {
    const form = await request.formData();
    const version = Number(formText(form, 'version'));
    // The newest version the page showed: restoring over a newer one someone saved meanwhile is refused (409), saying
    // who saved it.
    const base = Number(formText(form, 'base_version')) || undefined;
    return attempt(
      async () => {
        const agent = await versionsApi.restore(params.id, version, base);
        return `Version ${version} restored as version ${agent.current_version}.`;
      },
      (message, status) => (status === 409 ? `Version ${version} was not restored: ${message}.` : message),
    );
  },
};
