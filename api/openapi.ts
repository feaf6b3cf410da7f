// The OpenAPI 3.1 document of API v1 (GET /v1/openapi.json), assembled from the metadata each route file declares
// beside its handlers (api/routes/*.ts: method, path, operation id, summary, scope, body, answers) and the component
// schemas of api/openapi-schemas.ts. The test suite checks every response it receives against it
// (test/support/openapi-check.ts), and that every route the app mounts has its metadata and every metadata its
// route (test/integration/openapi.test.ts), so the document cannot drift from what the API answers.
import { queries, queryParameters } from './query-params';
import { ref, schemas, type Route, type Scope, type sse } from './openapi-schemas';
import { ssoRouteDocs } from './routes/sso';
import { memberRouteDocs } from './routes/members';
import { accountRouteDocs } from './routes/accounts';
import { agentRouteDocs } from './routes/agents';
import { testRunRouteDocs } from './routes/test-runs';
import { triggerRouteDocs } from './routes/triggers';
import { runLinkRouteDocs } from './routes/run-links';
import { runRouteDocs } from './routes/runs';
import { retryRouteDocs } from './routes/retries';
import { inboxRouteDocs } from './routes/inbox';
import { reviewRouteDocs } from './routes/reviews';
import { apiKeyRouteDocs } from './routes/api-keys';
import { connectionRouteDocs } from './routes/connections';
import { connectionOAuthRouteDocs } from './routes/connection-oauth';
import { toolRouteDocs } from './routes/tools';
import { hookRouteDocs } from './routes/hooks';
import { sourceRouteDocs } from './routes/sources';
import { skillRouteDocs } from './routes/skills';
import { wizardRouteDocs } from './routes/wizard';
import { chatRouteDocs } from './routes/chat';

/** Every route of the API, in the order of the document. */
export const routes: Route[] = [
  ...ssoRouteDocs,
  ...memberRouteDocs,
  ...accountRouteDocs,
  ...agentRouteDocs,
  ...testRunRouteDocs,
  ...triggerRouteDocs,
  ...runLinkRouteDocs,
  ...runRouteDocs,
  ...retryRouteDocs,
  ...inboxRouteDocs,
  ...reviewRouteDocs,
  ...apiKeyRouteDocs,
  ...connectionRouteDocs,
  ...connectionOAuthRouteDocs,
  ...toolRouteDocs,
  ...hookRouteDocs,
  ...sourceRouteDocs,
  ...skillRouteDocs,
  ...wizardRouteDocs,
  ...chatRouteDocs,
];

/** Problems every authenticated route can answer, besides its own (429: a key over CADRE_API_RATE_LIMIT). */
const authProblems = [401, 403, 404, 429];
/** Problems of any route that reads a body: not JSON (400), over the size limit (413), another media type (415). */
const bodyProblems = [400, 413, 415, 422];
/** Problems any request can meet: headers (the URL with its query included) over 16 kB (431), a fault (500). */
const everyRouteProblems = [431, 500];

/**
 * The rule every request is held to before its own schema (api/validation.ts), said in each request schema so the
 * document calls nothing valid that it refuses: no U+0000 and no lone surrogate in any text or object key. A
 * string's own pattern that lets them through (`\S`, not blank) gets the rule beside it; an enum says it already,
 * and a binary part (a file) is bytes, not text.
 */
const storableText = '^[^\\u0000\\uD800-\\uDFFF]*$';
const subschemaLists = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const subschemaMaps = new Set(['properties', 'patternProperties', '$defs']);
const subschemas = new Set(['items', 'additionalProperties', 'not', 'contains']);
function withTextRule(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (subschemaLists.has(k) && Array.isArray(v)) out[k] = v.map(withTextRule);
    else if (subschemaMaps.has(k) && typeof v === 'object' && v !== null)
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, withTextRule(sub)]));
    else if (subschemas.has(k)) out[k] = withTextRule(v);
    else out[k] = v;
  }
  const types = [out.type].flat();
  if (types.includes('string') && out.format !== 'binary' && !out.enum && out.const === undefined) {
    if (out.pattern === undefined) out.pattern = storableText;
    else if (['\u0000', 'a\u0000', '\ud800', 'a\ud800'].some((t) => new RegExp(String(out.pattern), 'u').test(t)))
      out.allOf = [...((out.allOf as unknown[]) ?? []), { pattern: storableText }];
  }
  // Keys are text too: a record's own rule for them keeps, with this one.
  if (types.includes('object')) out.propertyNames = withTextRule({ type: 'string', ...(out.propertyNames as object) });
  return out;
}

/** Keys carry scopes (an admin route takes a manage key); people bring their session cookie and role. */
function securityOf(scope: Scope) {
  if (scope === 'public') return [];
  if (scope === 'session') return [{ session: [] }];
  if (scope === 'owner') return [{ session: [] }];
  return [{ bearer: [scope === 'admin' ? 'manage' : scope] }, { session: [] }];
}

function response(schema: unknown) {
  if (schema === null) return { description: 'No content' };
  if (schema === 'file')
    return {
      description: 'The file',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  if (typeof schema === 'object' && schema !== null && 'sse' in schema) {
    const { description, events } = (schema as ReturnType<typeof sse>).sse;
    return {
      description,
      content: {
        'text/event-stream': {
          schema: { type: 'string' },
          // OpenAPI 3.1 has no keyword for event streams: each event's data is described as an extension.
          'x-events': events,
        },
      },
    };
  }
  if (schema === 'events')
    return {
      description: 'Server-sent events (`progress`, then `end`)',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    };
  return { description: 'OK', content: { 'application/json': { schema } } };
}

export function openApiDocument(publicUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const problems = new Set([
      ...(route.scope === 'public' ? [] : authProblems),
      ...(route.body || route.bodyContent ? bodyProblems : []),
      ...(route.id in queries ? [400] : []), // a query parameter it cannot use
      ...(route.id in queries || route.path.includes('{') ? [422] : []), // a parameter holding U+0000 (validation.ts)
      ...(route.errors ?? []),
      ...everyRouteProblems,
    ]);
    const params = [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
      ...(route.id in queries ? queryParameters(queries[route.id as keyof typeof queries]) : []),
    ].map((p) => ({ ...p, schema: withTextRule(p.schema) }));
    const content = route.bodyContent ?? { 'application/json': { schema: route.body } };
    paths[route.path] ??= {};
    paths[route.path][route.method] = {
      operationId: route.id,
      summary: route.summary,
      security: securityOf(route.scope),
      ...(params.length ? { parameters: params } : {}),
      ...(route.body || route.bodyContent
        ? {
            requestBody: {
              required: true,
              content: Object.fromEntries(
                Object.entries(content).map(([media, c]) => [media, { ...c, schema: withTextRule(c.schema) }]),
              ),
            },
          }
        : {}),
      responses: {
        ...Object.fromEntries(Object.entries(route.ok).map(([status, schema]) => [status, response(schema)])),
        ...Object.fromEntries(
          [...problems]
            .sort()
            .map((status) => [
              String(status),
              { description: 'Problem', content: { 'application/problem+json': { schema: ref('Problem') } } },
            ]),
        ),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cadre API',
      version: '1',
      description:
        'Agents, runs, approvals, triggers, files, sources, skills and members of a workspace. Authenticate with `Authorization: Bearer <API_KEY>` or a console session; errors are `application/problem+json`.',
    },
    servers: [{ url: `${publicUrl}/v1` }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'A workspace API key. Scopes: run (start runs, decide approvals), read, manage (implies read).',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'cadre_session',
          description:
            'A console session (POST /v1/auth/login). Roles: viewer (read), operator (+ run, decide approvals), editor (+ change agents), admin (+ members, invitations, API keys, audit log), owner. Changes need the X-CSRF-Token header.',
        },
      },
      schemas,
    },
    paths,
  };
}
