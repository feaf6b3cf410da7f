// Run Mode's calls: the public endpoints a link's token opens. They go without the console's key, so the page
// can do exactly what anyone holding the link can do, and nothing more.
import { env } from '$env/dynamic/private';
import { error } from '@sveltejs/kit';

export interface PublicRun {
  id: string;
  status: string;
  created_at: string;
  ended_at: string | null;
  counts: { total: number; pending: number; done: number; failed: number; needs_review: number; skipped: number };
  error: string | null;
  outputs: { node_id: string; data: unknown }[];
  files: { id: string; name: string; size: number; content_type: string }[];
}

const seg = encodeURIComponent;

export async function publicFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const base = (env.CADRE_INTERNAL_API_URL ?? '').replace(/\/+$/, '');
  let res: Response;
  try {
    res = await fetch(`${base}/v1/public/run-links/${path}`, init);
  } catch {
    error(502, 'Cadre cannot be reached right now');
  }
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { detail?: string };
    error(res.status >= 400 ? res.status : 502, body.detail ?? `HTTP ${res.status}`);
  }
  return res;
}

export const runModeApi = {
  link: async (token: string) =>
    (await (await publicFetch(seg(token))).json()) as {
      agent_name: string;
      description: string;
      input_format: string;
      accepting: boolean;
    },
  start: async (token: string, input: string, clientAddress: string) =>
    (await (
      await publicFetch(`${seg(token)}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': clientAddress },
        body: JSON.stringify({ input }),
      })
    ).json()) as PublicRun,
  run: async (token: string, runId: string) =>
    (await (await publicFetch(`${seg(token)}/runs/${seg(runId)}`)).json()) as PublicRun,
  file: (token: string, runId: string, fileId: string) =>
    publicFetch(`${seg(token)}/runs/${seg(runId)}/files/${seg(fileId)}`),
};
