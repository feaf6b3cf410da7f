// The console's only way to the Cadre API (DESIGN.md convention 10). It runs on the server and calls the API as
// the signed-in person: their session cookie and CSRF token go along with every call. (A console started with
// CADRE_CONSOLE_API_KEY instead operates that key's workspace without sign-in: for trusted single-user setups and
// tests.) Every refusal becomes a SvelteKit error carrying the API's problem detail, and an ended session sends
// the person to the sign-in page.
import { env } from '$env/dynamic/private';
import { error, redirect } from '@sveltejs/kit';
import { getRequestEvent } from '$app/server';
import { OPEN_APPROVAL_STATUSES } from '$lib/types';
import type {
  Agent,
  AgentState,
  Approval,
  ItemStatus,
  List,
  LogEntry,
  Run,
  RunDetails,
  RunItem,
  RunStatus,
  RunTrigger,
} from '$lib/types';

type Query = Record<string, string | number | null | undefined>;

function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

async function problemDetail(response: Response): Promise<string> {
  const body = await response.text().catch(() => '');
  try {
    const problem = JSON.parse(body) as { detail?: unknown; title?: unknown };
    if (typeof problem.detail === 'string' && problem.detail) return problem.detail;
    if (typeof problem.title === 'string' && problem.title) return problem.title;
  } catch {
    // Not problem+json (a proxy's error page, say): fall through to the raw text.
  }
  return body.trim().slice(0, 300) || response.statusText || `The API answered HTTP ${response.status}`;
}

/** To the sign-in page, coming back here afterwards. */
function signIn(url: URL): never {
  redirect(303, `/login?next=${encodeURIComponent(url.pathname + url.search)}`);
}

/** The raw call, for the file download proxy, which streams the body through untouched. */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const base = env.CADRE_INTERNAL_API_URL;
  if (!base) error(500, 'CADRE_INTERNAL_API_URL is not set in the web process environment');
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
    response = await fetch(base.replace(/\/+$/, '') + path, { ...init, headers });
  } catch {
    error(502, `The Cadre API at ${base} cannot be reached`);
  }
  if (response.status === 401 && session) signIn(event.url);
  // error() only takes 4xx/5xx; anything else that is not OK is the API misbehaving.
  if (!response.ok) error(response.status >= 400 ? response.status : 502, await problemDetail(response));
  return response;
}

async function getJson<T>(path: string, query?: Query): Promise<T> {
  const response = await apiFetch(withQuery(path, query));
  return (await response.json()) as T;
}

async function postJson<T>(path: string, body: unknown = {}): Promise<T> {
  const response = await apiFetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** Any JSON call: GET without a body, else the method with the body as JSON; 204 answers undefined. */
export async function callJson<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const response = await apiFetch(
    path,
    body === undefined
      ? { method }
      : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  return (response.status === 204 ? undefined : await response.json()) as T;
}

const seg = encodeURIComponent;

export interface Page {
  limit?: number;
  cursor?: string | null;
}

export interface Me {
  user: { id: string; email: string; name: string; two_factor: boolean };
  workspace: { id: string; name: string; plan: string; role: string } | null;
  workspaces: { id: string; name: string; plan: string; role: string }[];
}

export const api = {
  /** The signed-in person; null when the console works with its own key (no sign-in). */
  me: async (): Promise<Me | null> => {
    if (!getRequestEvent().cookies.get('cadre_session')) return null;
    return getJson<Me>('/v1/me');
  },
  listAgents: (page: Page = {}) => getJson<List<Agent>>('/v1/agents', { ...page }),
  getAgent: (id: string) => getJson<Agent>(`/v1/agents/${seg(id)}`),
  setAgentState: (id: string, state: AgentState) => postJson<Agent>(`/v1/agents/${seg(id)}/state`, { state }),
  /** A live agent runs for real; any other state can only be test-run. */
  startRun: (id: string, input: string, mode: 'manual-run' | 'test-run') =>
    postJson<Run>(`/v1/agents/${seg(id)}/${mode}`, { input }),

  listRuns: (filter: Page & { agent_id?: string; status?: RunStatus; trigger?: RunTrigger } = {}) =>
    getJson<List<Run>>('/v1/runs', { ...filter }),
  getRun: (id: string) => getJson<RunDetails>(`/v1/runs/${seg(id)}`),
  listRunItems: (id: string, filter: Page & { status?: ItemStatus; from_seq?: number } = {}) =>
    getJson<List<RunItem>>(`/v1/runs/${seg(id)}/items`, { ...filter }),
  listRunLogs: (id: string, page: Page = {}) => getJson<List<LogEntry>>(`/v1/runs/${seg(id)}/logs`, { ...page }),
  downloadRunFile: (runId: string, fileId: string) =>
    apiFetch(`/v1/runs/${seg(runId)}/files/${seg(fileId)}`, { headers: { accept: '*/*' } }),
  cancelRun: (id: string) => postJson<Run>(`/v1/runs/${seg(id)}/cancel`),

  /** Approvals a reviewer can still decide, oldest first: the one that has waited longest comes next. */
  listOpenApprovals: async () => {
    const pages = await Promise.all(
      OPEN_APPROVAL_STATUSES.map((status) => getJson<List<Approval>>('/v1/approvals', { status, limit: 100 })),
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
    postJson<unknown>(`/v1/approvals/${seg(id)}/decision`, {
      decision,
      ...(comment ? { comment } : {}),
      ...(edited !== undefined ? { arguments: edited } : {}),
    }),
};
