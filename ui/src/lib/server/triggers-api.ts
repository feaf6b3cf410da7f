// The console's calls for triggers, the public forms and the agent timeline, through the same typed client as
// every other console read (DESIGN.md convention 10).
import type { paths, Schemas } from '$api/client';
import { body, cleanQuery, client, done, publicAnswer, publicFetch } from './api';

export type Trigger = Schemas['Trigger'];
export type TimelineEvent = Schemas['TimelineEvent'];
export type TriggerBody = paths['/agents/{id}/triggers']['post']['requestBody']['content']['application/json'];
export type ScheduleBody = paths['/schedules/preview']['post']['requestBody']['content']['application/json'];

export const triggersApi = {
  list: (id: string) => body(client.GET('/agents/{id}/triggers', { params: { path: { id } } })),
  create: (id: string, trigger: TriggerBody) =>
    body(client.POST('/agents/{id}/triggers', { params: { path: { id } }, body: trigger })),
  remove: (id: string) => done(client.DELETE('/triggers/{id}', { params: { path: { id } } })),
  fire: (id: string) => body(client.POST('/triggers/{id}/fire', { params: { path: { id } } })),
  rotateSecret: (id: string) => body(client.POST('/triggers/{id}/rotate-secret', { params: { path: { id } } })),
  preview: (schedule: ScheduleBody) => body(client.POST('/schedules/preview', { body: schedule })),
  timeline: (id: string, cursor?: string) =>
    body(client.GET('/agents/{id}/timeline', { params: { path: { id }, query: cleanQuery({ limit: 30, cursor }) } })),
  /** A form's public definition, asked as the person filling it in: it opens without signing in to the console. */
  form: (id: string) => body(client.GET('/forms/{id}', { params: { path: { id } }, fetch: publicFetch })),
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
  const { data, error, response } = await client.POST('/forms/{id}/submissions', {
    params: { path: { id } },
    body: values,
    headers: { 'x-forwarded-for': clientAddress },
    fetch: publicAnswer,
  });
  // A submission the trigger's filter turns away starts no run.
  if (response.ok) return { ok: true, runId: data?.status === 'started' ? data.run_id : null };
  return {
    ok: false,
    message: error?.detail ?? `The form could not be sent (HTTP ${response.status}).`,
    errors: Object.fromEntries((error?.errors ?? []).flatMap((e) => (e.field ? [[e.field, e.message]] : []))),
  };
}
