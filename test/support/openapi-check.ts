// Checks API responses against the OpenAPI document: the operation must exist, must document the status it
// answered, and the body must match that status's schema. Integration tests run every response they receive
// through `checkResponse`, so the document and the API cannot drift apart unnoticed.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { openApiDocument } from '../../api/openapi';

const doc = openApiDocument('http://cadre.test');
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: 'cadre', components: doc.components }, 'cadre');

const compiled = new Map<string, ValidateFunction>();
const templates = Object.keys(doc.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
}));

type Operation = { operationId: string; responses: Record<string, { content?: Record<string, { schema: unknown }> }> };

/** Throws an AssertionError-like error naming the operation, the status and what does not match. */
export function checkResponse(method: string, url: string, status: number, contentType: string, body: unknown): void {
  const path = new URL(url, 'http://x').pathname.replace(/^\/v1/, '');
  if (path === '/openapi.json') return;
  const match = templates.find(
    (t) => t.pattern.test(path) && (doc.paths[t.template] as Record<string, unknown>)[method.toLowerCase()],
  );
  if (!match) {
    if (status === 404 || status === 401) return; // no such route (the key is checked before routing)
    throw new Error(`${method} ${path} is not in the OpenAPI document`);
  }
  const op = (doc.paths[match.template] as Record<string, Operation>)[method.toLowerCase()];
  const documented = op.responses[String(status)];
  if (!documented) {
    throw new Error(
      `${op.operationId} answered ${status}, which the OpenAPI document does not list (it lists ${Object.keys(op.responses).join(', ')}): ${JSON.stringify(body)?.slice(0, 300)}`,
    );
  }
  const media = Object.keys(documented.content ?? {})[0];
  if (!media) return; // no body documented (204)
  if (media === 'application/octet-stream' || media === 'text/event-stream') return;
  if (!contentType.startsWith(media))
    throw new Error(`${op.operationId} ${status}: content type ${contentType}, documented ${media}`);
  const key = `${op.operationId} ${status}`;
  let validate = compiled.get(key);
  if (!validate) {
    const schema = JSON.parse(
      JSON.stringify(documented.content![media].schema).replaceAll('"#/components/', '"cadre#/components/'),
    );
    validate = ajv.compile(schema);
    compiled.set(key, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${key} does not match the OpenAPI document: ${ajv.errorsText(validate.errors, { dataVar: 'body' })}\nbody: ${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}

/** fetch, with the response checked against the document before the test sees it. */
export async function checkedFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(url, init);
  const type = res.headers.get('content-type') ?? '';
  const body = type.includes('json') ? await res.clone().json() : undefined;
  checkResponse(init.method ?? 'GET', url, res.status, type, body);
  return res;
}

/** Operations that end the session, the account or the key the rest of a suite uses: sent last, with the key only. */
export const sentLast = new Set(['signOut', 'signOutEverywhere', 'deleteAccount']);

/**
 * Operations whose valid bodies are also held to rules JSON Schema cannot say, which the server is right to enforce:
 * an agent spec's graph (exactly one input node, every `next` names a node, no cycles), a trigger's time zone (an
 * IANA name), cron line and the agent it chains from. A body generated from the schema alone may break them.
 */
export const semanticBodies = new Set([
  'createAgent',
  'updateAgent',
  'importAgent',
  'createTrigger',
  'updateTrigger',
  'previewSchedule',
]);

/**
 * A 5xx that says how the test deployment is set up, not what was sent: Chat Mode without a model configured (the
 * suites' API has none) answers the documented 503 model_not_configured to any new conversation or question.
 */
const deploymentAnswers: Record<string, string> = {
  createConversation: 'model_not_configured',
  askChat: 'model_not_configured',
};

export function isDeploymentAnswer(operationId: string, status: number, body: unknown): boolean {
  return status === 503 && deploymentAnswers[operationId] === (body as { code?: unknown } | undefined)?.code;
}

export { doc as openApiDoc };
