// The typed client of API v1, derived from the OpenAPI document (api/client/paths.ts is generated from it):
// `client.GET('/runs/{id}', { params: { path: { id } } })` is checked against the route's path parameters, body
// and answers at compile time. Used by the console's server loads and by tests; integrators can copy it.
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './paths';

export type { paths };
export type Schemas = components['schemas'];
export type CadreClient = Client<paths>;

export function cadreClient(options: {
  /** Where Cadre answers, e.g. http://localhost:3000 (the client adds /v1). */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** To add headers per request (a session cookie) or turn refusals into errors. */
  fetch?: (request: Request) => Promise<Response>;
}): CadreClient {
  return createClient<paths>({
    baseUrl: `${options.baseUrl.replace(/\/+$/, '')}/v1`,
    headers: { ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}), ...options.headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
