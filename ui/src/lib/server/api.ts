// ui/ (DESIGN.md "Top-level layout"): the SvelteKit console. It reads only through server loads calling this
// module, with the types of the generated client ($lib/api-types.ts aliases api/client/paths.ts; no hand copy);
// what a person's role allows comes from the API (GET /v1/me). It never imports db/, services/ or activities/.
//
// The console's only way to the Cadre API (DESIGN.md convention 10). It runs on the server and calls the API as
// the signed-in person: their session cookie and CSRF token go along with every call. (A console started with
// CADRE_CONSOLE_API_KEY instead operates that key's workspace without sign-in: for trusted single-user setups and
// tests.) Every refusal becomes a SvelteKit error carrying the API's problem detail, and an ended session sends
// the person to the sign-in page.
import { env } from '$env/dynamic/private';
import { error, redirect } from '@sveltejs/kit';
import { getRequestEvent } from '$app/server';
import { cadreClient, type paths } from '$api/client';
import { OPEN_APPROVAL_STATUSES } from '$lib/api-types';
import type { AgentState, Me } from '$lib/api-types';

/** A refusal as the console's error: the problem's detail, and its per-field `errors` when it names any. */
async function problemDetail(response: Response): Promise<App.Error> {
  const body = await response.text().catch(() => '');
  try {
    const problem = JSON.parse(body) as { detail?: unknown; title?: unknown; errors?: unknown };
    const errors = Array.isArray(problem.errors) ? { errors: problem.errors as App.Error['errors'] } : {};
    if (typeof problem.detail === 'string' && problem.detail) return { message: problem.detail, ...errors };
    if (typeof problem.title === 'string' && problem.title) return { message: problem.title, ...errors };
  } catch {
    // Not problem+json (a proxy's error page, say): fall through to the raw text.
  }
  return { message: body.trim().slice(0, 300) || response.statusText || `The API answered HTTP ${response.status}` };
}

/** To the sign-in page, coming back here afterwards. */
function signIn(url: URL): never {
  redirect(303, `/login?next=${encodeURIComponent(url.pathname + url.search)}`);
}

/** Where the API answers the web process, without a trailing slash. */
export function apiBase(): string {
  const base = env.CADRE_INTERNAL_API_URL;
  if (!base) error(500, 'CADRE_INTERNAL_API_URL is not set in the web process environment');
  return base.replace(/\/+$/, '');
}

/**
 * A typed client's request as the path and init of a call to the API (the client's own base address is a
 * placeholder). The body is read whole: the client only sends JSON, and small.
 */
export async function unpack(request: Request): Promise<[path: string, init: RequestInit]> {
  const url = new URL(request.url);
  const body = await request.text();
  return [url.pathname + url.search, { method: request.method, headers: request.headers, body: body || undefined }];
}

/**
 * The call as the signed-in person (or with the console's key). Typed calls go through it; called directly it
 * is only for a body the typed client cannot send (a multipart upload).
 */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const base = apiBase();
  const headers = new Headers(init.headers);
  const event = getRequestEvent();
  const session = event.cookies.get('cadre_session');
  if (session) {
    headers.set('cookie', `cadre_session=${session}`);
    headers.set('x-csrf-token', event.cookies.get('cadre_csrf') ?? '');
  } else if (env.CADRE_CONSOLE_API_KEY) {
    headers.set('authorization', `Bearer ${env.CADRE_CONSOLE_API_KEY}`);
  } else {
    signIn(event.url);
  }
  headers.set('accept', headers.get('accept') ?? 'application/json');

  let response: Response;
  try {
    response = await fetch(base + path, { ...init, headers });
  } catch {
    error(502, `The Cadre API at ${base} cannot be reached`);
  }
  if (response.status === 401 && session) signIn(event.url);
  // error() only takes 4xx/5xx; anything else that is not OK is the API misbehaving.
  if (!response.ok) error(response.status >= 400 ? response.status : 502, await problemDetail(response));
  return response;
}

/**
 * The typed client (generated from the OpenAPI document) over apiFetch: each call's path, parameters and body are
 * checked at compile time, and a refusal is already a SvelteKit error when the client sees the answer. The public
 * and account routes pass their own `fetch` per call (publicFetch, session.ts's accountFetch).
 */
export const client = cadreClient({
  baseUrl: 'http://console.internal',
  fetch: async (request) => apiFetch(...(await unpack(request))),
});

/**
 * The body of a call that succeeded (its fetch has already turned every refusal into an error), typed as the
 * document declares the route's answer: no console type is laid over it.
 */
export async function body<T>(call: Promise<{ data?: T }>): Promise<T> {
  return (await call).data as T;
}

/** A call answered with no body (204), once its fetch has let it through. */
export async function done(call: Promise<unknown>): Promise<void> {
  await call;
}

/** A file or picture as the API answered it, its body left unread for the console to stream through. */
export async function download(call: Promise<{ response: Response }>): Promise<Response> {
  return (await call).response;
}

/**
 * Every page of a list the console shows whole (a settings table, a picker), following next_cursor: the first
 * page's other fields (a skills list's platform skills) with the data of all pages, and no cursor left.
 */
export async function allPages<L extends { data: unknown[]; next_cursor: string | null }>(
  page: (cursor: string | undefined) => Promise<L>,
): Promise<L> {
  const first = await page(undefined);
  const data = [...first.data];
  for (let next = first.next_cursor; next;) {
    const more = await page(next);
    data.push(...more.data);
    next = more.next_cursor;
  }
  return { ...first, data, next_cursor: null };
}

/** Route P's query parameters as the document declares them; a blank one (null or '') is left out of the call. */
export type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } }
  ? { [K in keyof NonNullable<Q>]: NonNullable<Q>[K] | null }
  : never;

/**
 * The query without its blank values (undefined, null, ''), keeping the caller's keys and value types. openapi-fetch
 * lets an unknown name through beside a known one, so the filters the pages pass are typed as QueryOf<route>: a
 * name or value the route does not declare fails to compile there.
 */
export function cleanQuery<Q extends object>(query: Q): { [K in keyof Q]?: Exclude<Q[K], null | undefined> } {
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== '')) as {
    [K in keyof Q]?: Exclude<Q[K], null | undefined>;
  };
}

/**
 * For the public routes (a form, Run Mode), as a typed call's `fetch`: the person at the browser may not be signed
 * in, and what they may do is what the link allows, so the call carries none of the console's credentials. A
 * refusal becomes an error carrying the API's detail, as with apiFetch; `publicAnswer` leaves it to the caller.
 */
export async function publicFetch(request: Request): Promise<Response> {
  const response = await publicAnswer(request);
  if (!response.ok) error(response.status >= 400 ? response.status : 502, await problemDetail(response));
  return response;
}

export async function publicAnswer(request: Request): Promise<Response> {
  const [path, init] = await unpack(request);
  try {
    return await fetch(apiBase() + path, init);
  } catch {
    error(502, 'Cadre cannot be reached right now');
  }
}

/** An agent spec as the API takes it (create, import, save): the API checks it and names each problem (422). */
export type AgentSpecBody = paths['/agents']['post']['requestBody']['content']['application/json'];

export const api = {
  /** The signed-in person; null when the console works with its own key (no sign-in). */
  me: async (): Promise<Me | null> => {
    if (!getRequestEvent().cookies.get('cadre_session')) return null;
    return body(client.GET('/me'));
  },
  listAgents: (page: QueryOf<'/agents'> = {}) => body(client.GET('/agents', { params: { query: cleanQuery(page) } })),
  getAgent: (id: string) => body(client.GET('/agents/{id}', { params: { path: { id } } })),
  setAgentState: (id: string, state: AgentState) =>
    body(client.POST('/agents/{id}/state', { params: { path: { id } }, body: { state } })),
  /** A live agent runs for real; any other state can only be test-run. */
  startRun: (id: string, input: string, mode: 'manual-run' | 'test-run') =>
    body(
      mode === 'manual-run'
        ? client.POST('/agents/{id}/manual-run', { params: { path: { id } }, body: { input } })
        : client.POST('/agents/{id}/test-run', { params: { path: { id } }, body: { input } }),
    ),

  listRuns: (filter: QueryOf<'/runs'> = {}) => body(client.GET('/runs', { params: { query: cleanQuery(filter) } })),
  getRun: (id: string) => body(client.GET('/runs/{id}', { params: { path: { id } } })),
  listRunItems: (id: string, filter: QueryOf<'/runs/{id}/items'> = {}) =>
    body(client.GET('/runs/{id}/items', { params: { path: { id }, query: cleanQuery(filter) } })),
  listRunLogs: (id: string, page: QueryOf<'/runs/{id}/logs'> = {}) =>
    body(client.GET('/runs/{id}/logs', { params: { path: { id }, query: cleanQuery(page) } })),
  downloadRunFile: (id: string, fileId: string) =>
    download(
      client.GET('/runs/{id}/files/{fileId}', {
        params: { path: { id, fileId } },
        headers: { accept: '*/*' },
        parseAs: 'stream',
      }),
    ),
  cancelRun: (id: string) => body(client.POST('/runs/{id}/cancel', { params: { path: { id } } })),
  pauseRun: (id: string) => body(client.POST('/runs/{id}/pause', { params: { path: { id } } })),
  resumeRun: (id: string) => body(client.POST('/runs/{id}/resume', { params: { path: { id } } })),

  /** Approvals a reviewer can still decide, oldest first: the one that has waited longest comes next. */
  /** Approvals still open, oldest first: at most `limit` of each open status, `more` when there are others. */
  listOpenApprovals: async (limit = 500) => {
    const pages = await Promise.all(
      OPEN_APPROVAL_STATUSES.map((status) => body(client.GET('/approvals', { params: { query: { status, limit } } }))),
    );
    const data = pages.flatMap((p) => p.data).sort((a, b) => Date.parse(a.requested_at) - Date.parse(b.requested_at));
    return { data, more: pages.some((p) => p.next_cursor != null) };
  },
  decideApproval: (
    id: string,
    decision: 'approve' | 'reject' | 'approve_with_edits',
    comment?: string,
    edited?: unknown,
  ) =>
    body(
      client.POST('/approvals/{id}/decision', {
        params: { path: { id } },
        body: {
          decision,
          ...(comment ? { comment } : {}),
          ...(edited !== undefined ? { arguments: edited as Record<string, unknown> } : {}),
        },
      }),
    ),
  listReviews: (filter: { status?: 'pending'; agent_id?: string; run_id?: string }) =>
    body(client.GET('/reviews', { params: { query: cleanQuery({ ...filter, limit: 500 }) } })),
  decideReview: (
    id: string,
    decision: {
      action: 'accept' | 'reject' | 'send_to';
      output?: Record<string, unknown>;
      reason?: string;
      node_id?: string;
    },
  ) => body(client.POST('/reviews/{id}/decision', { params: { path: { id } }, body: decision })),
};
