// Integrations: the workspace's connections. Connecting or changing one is tested by the API first; its refusal
// (422 with the server's reason) comes back to the form that was sent, with what was typed but the password or the
// headers' values.
import { fail, isHttpError } from '@sveltejs/kit';
import { connectorKind, type McpFormValues, type SqlFormValues } from '$lib/connectors';
import { formText } from '$lib/server/actions';
import { mcpConfig, mcpHeadersOf, mcpValues, passwordOf, sqlConfig, sqlValues } from '$lib/server/connection-forms';
import { connectionsApi } from '$lib/server/connections-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async () => ({ connections: await connectionsApi.list() });

/** What a form action answers: `form` names the form it came from ('connect' or a connection's id). */
interface Outcome {
  ok: boolean;
  message: string;
  form: string;
  name?: string;
  kind?: string;
  values?: SqlFormValues;
  mcp?: McpFormValues;
  /** The tools an MCP server offers, after Test. */
  tools?: string[];
}

/** A success is told above the list (the form is done with); a refusal goes back to its form, with its values. */
async function refusedTo(form: Outcome, call: () => Promise<string>) {
  try {
    return { ok: true, message: await call(), form: 'list' } satisfies Outcome;
  } catch (e) {
    if (isHttpError(e)) return fail(e.status, { ...form, ok: false, message: e.body.message } satisfies Outcome);
    throw e;
  }
}

export const actions: Actions = {
  connect: async ({ request }) => {
    const form = await request.formData();
    const name = formText(form, 'name');
    const kind = formText(form, 'kind');
    if (connectorKind(kind)?.form === 'mcp') {
      const mcp = mcpValues(form);
      return refusedTo({ form: 'connect', name, kind, mcp, ok: false, message: '' }, async () => {
        const created = await connectionsApi.create({
          name,
          kind: 'mcp',
          config: mcpConfig(mcp),
          credentials: { headers: mcpHeadersOf(form) ?? {} },
        });
        return `Connected “${created.name}”.`;
      });
    }
    const values = sqlValues(form);
    const echo = { form: 'connect', name, kind, values, ok: false, message: '' };
    if (connectorKind(kind)?.form !== 'sql')
      return fail(400, { ...echo, message: 'Choose what kind of system to connect.' } satisfies Outcome);
    return refusedTo(echo, async () => {
      const created = await connectionsApi.create({
        name,
        kind: kind as 'postgres' | 'mysql',
        config: sqlConfig(values),
        credentials: { password: passwordOf(form) },
      });
      return `Connected “${created.name}”.`;
    });
  },

  update: async ({ request }) => {
    const form = await request.formData();
    const id = formText(form, 'id');
    if (connectorKind(formText(form, 'kind'))?.form === 'mcp') {
      const mcp = mcpValues(form);
      const headers = mcpHeadersOf(form);
      return refusedTo({ form: id, mcp, ok: false, message: '' }, async () => {
        const updated = await connectionsApi.update(id, {
          config: mcpConfig(mcp),
          // No header value typed keeps the saved headers.
          ...(headers ? { credentials: { headers } } : {}),
        });
        return `Saved and reconnected “${updated.name}”.`;
      });
    }
    const values = sqlValues(form);
    const password = passwordOf(form);
    return refusedTo({ form: id, values, ok: false, message: '' }, async () => {
      const updated = await connectionsApi.update(id, {
        config: sqlConfig(values),
        // A blank password keeps the current one.
        ...(password ? { credentials: { password } } : {}),
      });
      return `Saved and reconnected “${updated.name}”.`;
    });
  },

  test: async ({ request }) => {
    const form = await request.formData();
    const id = formText(form, 'id');
    const name = formText(form, 'name');
    try {
      const result = await connectionsApi.test(id);
      const outcome = result.ok
        ? { ok: true, message: `“${name}” answers: ${result.server_version ?? 'connected'}.`, tools: result.tools }
        : { ok: false, message: `“${name}” cannot connect: ${result.detail ?? 'no reason given'}` };
      return { ...outcome, form: 'list' } satisfies Outcome;
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message, form: 'list' } satisfies Outcome);
      throw e;
    }
  },

  remove: async ({ request }) => {
    const form = await request.formData();
    const id = formText(form, 'id');
    const name = formText(form, 'name');
    return refusedTo({ form: 'list', ok: false, message: '' }, async () => {
      await connectionsApi.remove(id);
      return `Removed “${name}”. Agents that list it cannot go live until it is connected again.`;
    });
  },
};
