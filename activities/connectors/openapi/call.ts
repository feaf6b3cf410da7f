// Calls one operation of a REST API connection: the tool's arguments placed as its document says (path, query,
// header, JSON body), the connection's auth added, the answer checked against the document. A 429 or a 5xx is retried
// (after Retry-After when given); any other refusal fails the step with the API's own words.
import { Ajv } from 'ajv';
import { ApplicationFailure } from '@temporalio/common';
import type { OpenApiConfig, OpenApiCredentials } from '../../../model/connection';
import { BlockedAddressError } from '../../tools/ssrf-guard';
import type { OpenApiOperation } from '../../../model/openapi-document';

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const validators = new WeakMap<object, ReturnType<typeof ajv.compile>>();

export interface OpenApiTarget {
  /** Where the tool is named in messages: `api.inventory.getItem`. */
  tool: string;
  connection: string;
  baseUrl: string;
  auth: OpenApiConfig['auth'];
  credentials: OpenApiCredentials;
  /**
   * How requests are sent: fetch to allowed addresses only (publicFetch), with (auth oauth2) the account's token added
   * and refreshed on 401.
   */
  send: (url: URL, init: RequestInit) => Promise<Response>;
}

function requestOf(op: OpenApiOperation, input: Record<string, unknown>, target: OpenApiTarget) {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(String(input[name] ?? '')));
  const url = new URL(`${target.baseUrl}${path}`);
  const headers: Record<string, string> = { accept: 'application/json' };
  for (const p of op.parameters) {
    const value = input[p.name];
    if (value === undefined || p.in === 'path') continue;
    if (p.in === 'header') headers[p.name.toLowerCase()] = String(value);
    else for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(p.name, String(v));
  }
  const { auth, credentials } = target;
  const secret = credentials.secret ?? '';
  if (auth.type === 'bearer') headers.authorization = `Bearer ${secret}`;
  else if (auth.type === 'basic')
    headers.authorization = `Basic ${Buffer.from(`${auth.username}:${secret}`).toString('base64')}`;
  else if (auth.type === 'api_key' && auth.in === 'header') headers[auth.name.toLowerCase()] = secret;
  else if (auth.type === 'api_key') url.searchParams.set(auth.name, secret);
  let body: string | undefined;
  if (op.hasBody && input.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(input.body);
  }
  return { url, headers, body };
}

/** The documented schema of this answer: its own status, its class (`2XX`), or `default`. */
const answerSchema = (op: OpenApiOperation, status: number) =>
  op.answers[String(status)] ?? op.answers[`${String(status)[0]}XX`] ?? op.answers.default;

export async function callOpenApiOperation(
  op: OpenApiOperation,
  input: Record<string, unknown>,
  target: OpenApiTarget,
  idempotencyKey: string,
): Promise<{ status: number; body: unknown }> {
  const { url, headers, body } = requestOf(op, input, target);
  // The de facto convention of payment and business APIs: a write sent again with the same key happens once.
  if (op.method !== 'get' && op.method !== 'head') headers['idempotency-key'] = idempotencyKey;
  let res: Response;
  try {
    res = await target.send(url, {
      method: op.method.toUpperCase(),
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err; // an OAuth account that must be authorized again
    if (err instanceof BlockedAddressError)
      throw ApplicationFailure.nonRetryable(`${target.tool}: ${err.message}`, 'BlockedAddress');
    throw ApplicationFailure.retryable(
      `${target.tool}: ${url.origin} did not answer: ${(err as Error).message}`,
      'ApiUnreachable',
    );
  }
  const text = await res.text();
  let answer: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) {
    try {
      answer = JSON.parse(text);
    } catch {
      // kept as text; a documented JSON answer then fails the check below
    }
  }
  const said = (typeof answer === 'string' ? answer : JSON.stringify(answer)).slice(0, 500);
  if (res.status === 429 || res.status >= 500) {
    const wait = Number(res.headers.get('retry-after'));
    throw ApplicationFailure.create({
      message: `${target.tool}: the API answered ${res.status}: ${said}`,
      type: 'ApiUnavailable',
      nonRetryable: false,
      nextRetryDelay: Number.isFinite(wait) && wait > 0 ? wait * 1000 : undefined,
    });
  }
  if (res.status === 401 || res.status === 403)
    throw ApplicationFailure.nonRetryable(
      `${target.tool}: the API refused the credentials of connection "${target.connection}" (${res.status}): ${said}; update them in Integrations`,
      'ApiUnauthorized',
    );
  if (res.status >= 300)
    throw ApplicationFailure.nonRetryable(`${target.tool}: the API answered ${res.status}: ${said}`, 'ApiRefused');
  const schema = answerSchema(op, res.status);
  if (schema && typeof schema === 'object') {
    let validate = validators.get(schema);
    if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
    if (!validate(answer))
      throw ApplicationFailure.nonRetryable(
        `${target.tool}: the API's answer does not match its document (${ajv.errorsText(validate.errors)})`,
        'ApiAnswerInvalid',
      );
  }
  return { status: res.status, body: answer };
}
