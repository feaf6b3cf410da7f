// The console's calls for triggers, the public forms and the agent timeline, through the same apiFetch as
// every other console read (DESIGN.md convention 10).
import { env } from '$env/dynamic/private';
import { apiFetch } from './api';

export interface ScheduleView {
  schedule_id: string;
  paused: boolean;
  description: string;
  policies: string;
  timezone: string;
  next_fire_times: string[];
}

export interface FormFieldDef {
  name: string;
  label: string;
  type: 'text' | 'textarea' | 'number' | 'email' | 'date' | 'select' | 'checkbox';
  required: boolean;
  options?: string[];
  help?: string;
}

export interface Trigger {
  id: string;
  agent_id: string;
  kind: 'schedule' | 'webhook' | 'form' | 'chain';
  name: string;
  active: boolean;
  config: Record<string, unknown>;
  created_at: string;
  schedule?: ScheduleView;
  webhook?: { url: string; signing: string; replay_window_seconds: number };
  form?: { url: string; definition_url: string; fields: FormFieldDef[] };
  chain?: { source_agent_id: string; on_statuses: string[] };
  secret?: string;
}

export interface TimelineEvent {
  id: number;
  at: string;
  kind: string;
  message: string;
  run_id: string | null;
  trigger_id: string | null;
}

export interface PublicForm {
  id: string;
  title: string;
  description: string;
  fields: FormFieldDef[];
  submit_label: string;
  accepting: boolean;
}

const json = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
  const res = await apiFetch(path, init);
  return (res.status === 204 ? undefined : await res.json()) as T;
};
const send = (method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: body === undefined ? undefined : JSON.stringify(body),
});
const seg = encodeURIComponent;

export const triggersApi = {
  list: (agentId: string) => json<{ data: Trigger[] }>(`/v1/agents/${seg(agentId)}/triggers`),
  create: (agentId: string, body: unknown) => json<Trigger>(`/v1/agents/${seg(agentId)}/triggers`, send('POST', body)),
  remove: (id: string) => json<void>(`/v1/triggers/${seg(id)}`, { method: 'DELETE' }),
  fire: (id: string) => json<void>(`/v1/triggers/${seg(id)}/fire`, { method: 'POST' }),
  rotateSecret: (id: string) => json<Trigger>(`/v1/triggers/${seg(id)}/rotate-secret`, { method: 'POST' }),
  preview: (schedule: unknown) =>
    json<Omit<ScheduleView, 'schedule_id' | 'paused'>>('/v1/schedules/preview', send('POST', schedule)),
  timeline: (agentId: string, cursor?: string) =>
    json<{ data: TimelineEvent[]; next_cursor: string | null }>(
      `/v1/agents/${seg(agentId)}/timeline?limit=30${cursor ? `&cursor=${seg(cursor)}` : ''}`,
    ),
  form: (id: string) => json<PublicForm>(`/v1/forms/${seg(id)}`),
};

/**
 * A form submission. Refusals are answers here, not errors: per-field problems (422), the agent paused (409)
 * and the rate limit (429) go back to the person filling the form. The client's address is forwarded so the
 * API's rate limit counts per person, not per console.
 */
export async function submitForm(
  id: string,
  values: Record<string, string | boolean>,
  clientAddress: string,
): Promise<{ ok: true; runId: string | null } | { ok: false; message: string; errors: Record<string, string> }> {
  const base = env.CADRE_INTERNAL_API_URL ?? '';
  const res = await fetch(`${base.replace(/\/+$/, '')}/v1/forms/${seg(id)}/submissions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': clientAddress },
    body: JSON.stringify(values),
  });
  const body = (await res.json().catch(() => ({}))) as {
    run_id?: string;
    detail?: string;
    errors?: { field: string; message: string }[];
  };
  if (res.ok) return { ok: true, runId: body.run_id ?? null };
  return {
    ok: false,
    message: body.detail ?? `The form could not be sent (HTTP ${res.status}).`,
    errors: Object.fromEntries((body.errors ?? []).map((e) => [e.field, e.message])),
  };
}
