// Operator Mode: edit an agent's instructions, workflow, tools' approval policy and error policy. Saving
// writes a new version; the API checks it and its refusal (422, one reason per problem) is shown here.
import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { allPages, api, type AgentSpecBody } from '$lib/server/api';
import { connectionsApi, type Connection, type ConnectionTool } from '$lib/server/connections-api';
import { editorApi } from '$lib/server/editor-api';
import { skillsApi } from '$lib/server/skills-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const [agent, tools, connections, skills, agents] = await Promise.all([
    api.getAgent(params.id),
    editorApi.tools(),
    connectionsApi.list(),
    skillsApi.list(),
    allPages((cursor) => api.listAgents({ limit: 100, cursor })),
  ]);
  // The agents a call_agent node may hand items to: every other agent of the workspace, by name.
  const otherAgents = agents.data
    .filter((a) => a.id !== agent.id)
    .map((a) => ({ id: a.id, name: a.name }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    agent,
    tools,
    connections,
    skills: skills.data,
    agents: otherAgents,
    mcpTools: await mcpToolsOf(connections),
  };
};

/**
 * The tools of the workspace's MCP servers, by connection name, for the pickers once the agent lists one. A server
 * that cannot be reached now has none, and says why.
 */
async function mcpToolsOf(connections: Connection[]) {
  const servers = connections.filter((c) => c.kind === 'mcp');
  const listed = await Promise.all(
    servers.map(async (c): Promise<[string, { tools: ConnectionTool[]; problem?: string }]> => {
      try {
        return [c.name, { tools: await connectionsApi.tools(c.id) }];
      } catch (e) {
        if (!isHttpError(e)) throw e;
        return [c.name, { tools: [], problem: e.body.message }];
      }
    }),
  );
  return Object.fromEntries(listed);
}

export const actions: Actions = {
  save: async ({ params, request }) => {
    const form = await request.formData();
    const raw = form.get('spec');
    // The version the edit started from: kept across a refused save, so a second press is checked against it too.
    const base = Number(form.get('base_version')) || undefined;
    let spec: AgentSpecBody;
    try {
      // As the editor built it: the API checks it and names each problem (422).
      spec = JSON.parse(typeof raw === 'string' ? raw : '') as AgentSpecBody;
    } catch {
      return fail(400, { ok: false, message: 'The edited agent could not be read; reload the page and try again.' });
    }
    let saved = 0;
    try {
      saved = (await editorApi.save(params.id, spec, base)).current_version;
    } catch (e) {
      // The API's refusal goes back to the editor with what was typed: 422 names each problem, 409 who saved a newer
      // version meanwhile (two people editing one agent).
      if (isHttpError(e))
        return fail(e.status, {
          ok: false,
          message:
            e.status === 404
              ? 'This agent was deleted while you were editing it, so your change was not saved. Your edit is still on this page: create a new agent to keep it.'
              : e.body.message,
          spec: raw,
          base_version: base,
          conflict: e.status === 409,
        });
      throw e;
    }
    redirect(303, `/agents/${params.id}?saved=${saved}`);
  },
};
