// Integrations: the workspace's connections. Connecting or changing one is tested by the API first; its refusal
// (422 with the server's reason) comes back to the form that was sent, with what was typed but the password, the
// secret or the headers' values. An OAuth 2.0 account is then authorized at its provider: the person is sent there,
// and the provider sends them back here with `connected` or `connection_error` in the query.
import { fail, isHttpError, redirect } from '@sveltejs/kit';
import {
  connectorKind,
  type Connector,
  type McpFormValues,
  type OAuth2FormValues,
  type OpenApiFormValues,
  type SqlFormValues,
} from '$lib/connectors';
import { formText } from '$lib/server/actions';
import {
  clientSecretOf,
  DocumentTextError,
  mcpConfig,
  mcpHeadersOf,
  mcpValues,
  oauth2Config,
  oauth2Values,
  openApiConfig,
  openApiValues,
  passwordOf,
  secretOf,
  sqlConfig,
  sqlValues,
} from '$lib/server/connection-forms';
import { connectionsApi, type NewConnection } from '$lib/server/connections-api';
import { echoOf, fieldGroups, FieldValueError, readFields } from '$lib/schema-form';
import type { ActionOutcome } from '$lib/action-outcome';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ url }) => {
  const connected = url.searchParams.get('connected');
  const refused = url.searchParams.get('connection_error');
  // Back from an OAuth 2.0 provider: the API's callback says how it went.
  const returned: ActionOutcome | null = connected
    ? { ok: true, message: `Authorized “${connected}”: agents can act through it now.` }
    : refused
      ? { ok: false, message: refused }
      : null;
  const [connections, connectors, mcpServers] = await Promise.all([
    connectionsApi.list(),
    connectionsApi.connectors(),
    connectionsApi.mcpServers(),
  ]);
  // Linked from the creation wizard with the kind (and name) an agent needs.
  const kind = url.searchParams.get('kind');
  const preselect = kind ? { kind, name: url.searchParams.get('name') ?? '' } : null;
  return { connections, connectors, mcpServers, returned, preselect };
};

/** What a form action answers: `form` names the form it came from ('connect', 'list' or a connection's id). */
interface Outcome {
  ok: boolean;
  message: string;
  form: string;
  name?: string;
  kind?: string;
  values?: SqlFormValues;
  mcp?: McpFormValues;
  openapi?: OpenApiFormValues;
  oauth2?: OAuth2FormValues;
  /** A connector's settings as typed (never its credentials). */
  settings?: Record<string, unknown>;
  /** The tools a connection offers (an MCP server's, a REST API's operations), after connecting or Test. */
  tools?: string[];
}

/** A success is told above the list (the form is done with); a refusal goes back to its form, with its values. */
async function refusedTo(form: Outcome, call: () => Promise<string | { message: string; tools?: string[] }>) {
  try {
    const done = await call();
    return { ok: true, ...(typeof done === 'string' ? { message: done } : done), form: 'list' } satisfies Outcome;
  } catch (e) {
    if (isHttpError(e)) return fail(e.status, { ...form, ok: false, message: e.body.message } satisfies Outcome);
    if (e instanceof DocumentTextError || e instanceof FieldValueError)
      return fail(400, { ...form, ok: false, message: e.message } satisfies Outcome);
    throw e;
  }
}

/** The fields of a connector's settings and of its credentials. */
const schemaGroups = (connector: Connector) => ({
  config: fieldGroups(connector.config_schema, 'config'),
  credentials: fieldGroups(connector.credentials_schema, 'credentials'),
});

/** A REST API's operations as the tools agents call. */
const toolNames = async (id: string) => (await connectionsApi.tools(id)).map((t) => t.name);

export const actions: Actions = {
  connect: async ({ request }) => {
    const form = await request.formData();
    const name = formText(form, 'name');
    const kind = formText(form, 'kind');
    const echo = { form: 'connect', name, kind, ok: false, message: '' };
    const connectors = await connectionsApi.connectors();
    switch (connectorKind(kind, connectors)?.form) {
      case 'connector': {
        const connector = connectors.find((c) => c.kind === kind)!;
        const { config, credentials } = schemaGroups(connector);
        return refusedTo({ ...echo, settings: echoOf(form, config) }, async () => {
          const created = await connectionsApi.create({
            name,
            kind: connector.kind,
            config: readFields(form, config),
            credentials: readFields(form, credentials),
          } as NewConnection);
          return `Connected “${created.name}” (${connector.label}).`;
        });
      }
      case 'mcp': {
        const mcp = mcpValues(form);
        return refusedTo({ ...echo, mcp }, async () => {
          const created = await connectionsApi.create({
            name,
            kind: 'mcp',
            config: mcpConfig(mcp),
            credentials: { headers: mcpHeadersOf(form) ?? {} },
          });
          return `Connected “${created.name}”.`;
        });
      }
      case 'openapi': {
        const openapi = openApiValues(form);
        const secret = secretOf(form);
        return refusedTo({ ...echo, openapi }, async () => {
          const created = await connectionsApi.create({
            name,
            kind: 'openapi',
            config: openApiConfig(openapi),
            credentials: secret === undefined ? {} : { secret },
          });
          const tools = await toolNames(created.id);
          const are = tools.length === 1 ? '1 operation is a tool' : `${tools.length} operations are tools`;
          return { message: `Connected “${created.name}”: ${are}.`, tools };
        });
      }
      case 'oauth2': {
        const oauth2 = oauth2Values(form);
        const secret = clientSecretOf(form);
        let authorizationUrl: string | undefined;
        const outcome = await refusedTo({ ...echo, oauth2 }, async () => {
          const created = await connectionsApi.create({
            name,
            kind: 'oauth2',
            config: oauth2Config(oauth2),
            credentials: { client_secret: secret ?? '' },
          });
          authorizationUrl = created.authorization_url;
          return `Saved “${created.name}”: authorize it at the provider.`;
        });
        // On to the provider's sign-in and consent; it sends the person back to this page.
        if (authorizationUrl) redirect(303, authorizationUrl);
        return outcome;
      }
      case 'sql': {
        const values = sqlValues(form);
        return refusedTo({ ...echo, values }, async () => {
          const created = await connectionsApi.create({
            name,
            kind: kind as 'postgres' | 'mysql',
            config: sqlConfig(values),
            credentials: { password: passwordOf(form) },
          });
          return `Connected “${created.name}”.`;
        });
      }
      default:
        return fail(400, { ...echo, message: 'Choose what kind of system to connect.' } satisfies Outcome);
    }
  },

  update: async ({ request }) => {
    const form = await request.formData();
    const id = formText(form, 'id');
    const echo = { form: id, ok: false, message: '' };
    const saved = (c: { name: string }) => `Saved and reconnected “${c.name}”.`;
    const kind = formText(form, 'kind');
    const connectors = await connectionsApi.connectors();
    switch (connectorKind(kind, connectors)?.form) {
      case 'connector': {
        const { config, credentials } = schemaGroups(connectors.find((c) => c.kind === kind)!);
        return refusedTo({ ...echo, settings: echoOf(form, config) }, async () => {
          // Secrets left blank are kept.
          const typed = readFields(form, credentials);
          return saved(
            await connectionsApi.update(id, {
              config: readFields(form, config),
              ...(Object.keys(typed).length > 0 ? { credentials: typed } : {}),
            }),
          );
        });
      }
      case 'mcp': {
        const mcp = mcpValues(form);
        const headers = mcpHeadersOf(form);
        return refusedTo({ ...echo, mcp }, async () =>
          saved(
            await connectionsApi.update(id, {
              config: mcpConfig(mcp),
              // No header value typed keeps the saved headers.
              ...(headers ? { credentials: { headers } } : {}),
            }),
          ),
        );
      }
      case 'openapi': {
        const openapi = openApiValues(form);
        const secret = secretOf(form);
        return refusedTo({ ...echo, openapi }, async () => {
          const updated = await connectionsApi.update(id, {
            config: openApiConfig(openapi, true),
            // A blank secret keeps the saved one.
            ...(secret === undefined ? {} : { credentials: { secret } }),
          });
          return { message: saved(updated), tools: await toolNames(updated.id) };
        });
      }
      case 'oauth2': {
        const oauth2 = oauth2Values(form);
        const secret = clientSecretOf(form);
        return refusedTo({ ...echo, oauth2 }, async () => {
          const updated = await connectionsApi.update(id, {
            config: oauth2Config(oauth2),
            ...(secret === undefined ? {} : { credentials: { client_secret: secret } }),
          });
          return updated.status === 'pending_authorization'
            ? `Saved “${updated.name}”: its settings changed, so authorize it again at the provider.`
            : `Saved “${updated.name}”.`;
        });
      }
      default: {
        const values = sqlValues(form);
        const password = passwordOf(form);
        return refusedTo({ ...echo, values }, async () =>
          saved(
            await connectionsApi.update(id, {
              config: sqlConfig(values),
              // A blank password keeps the current one.
              ...(password ? { credentials: { password } } : {}),
            }),
          ),
        );
      }
    }
  },

  // An OAuth 2.0 account: a new link to its provider's consent page, where the person goes at once.
  authorize: async ({ request }) => {
    const form = await request.formData();
    let authorizationUrl: string;
    try {
      authorizationUrl = await connectionsApi.authorize(formText(form, 'id'));
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message, form: 'list' } satisfies Outcome);
      throw e;
    }
    redirect(303, authorizationUrl);
  },

  test: async ({ request }) => {
    const form = await request.formData();
    const id = formText(form, 'id');
    const name = formText(form, 'name');
    try {
      const result = await connectionsApi.test(id);
      const outcome = result.ok
        ? { ok: true, message: `“${name}” answers: ${result.server_version ?? 'reachable'}.`, tools: result.tools }
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
