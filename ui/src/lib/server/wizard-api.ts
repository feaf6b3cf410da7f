// The agent creation wizard as the console drives it through the API (DESIGN.md convention 10).
import type { paths } from '$api/client';
import { apiFetch, body, client } from './api';

export type WizardSession = paths['/wizard/sessions/{id}']['get']['responses'][200]['content']['application/json'];
export type InstructionParts =
  paths['/wizard/sessions/{id}/instructions']['put']['requestBody']['content']['application/json']['instructions'];
export type ProposedConnection = WizardSession['connections'][number];

const path = (id: string) => ({ params: { path: { id } } });

export const wizardApi = {
  starters: () => body(client.GET('/wizard/starters')),
  /** The goal and the files as multipart (raw: the typed client sends JSON only); the answer is typed. */
  start: async (goal: string, files: File[]): Promise<WizardSession> => {
    const form = new FormData();
    form.append('goal', goal);
    for (const f of files) form.append('files', f, f.name);
    return (await apiFetch('/v1/wizard/sessions', { method: 'POST', body: form })).json();
  },
  get: (id: string) => body(client.GET('/wizard/sessions/{id}', path(id))),
  questions: (id: string) => body(client.POST('/wizard/sessions/{id}/questions', path(id))),
  answer: (id: string, answers: string[]) =>
    body(client.POST('/wizard/sessions/{id}/answers', { ...path(id), body: { answers } })),
  editInstructions: (id: string, instructions: InstructionParts) =>
    body(client.PUT('/wizard/sessions/{id}/instructions', { ...path(id), body: { instructions } })),
  buildWorkflow: (id: string, starter?: string) =>
    body(client.POST('/wizard/sessions/{id}/workflow', { ...path(id), body: starter ? { starter } : {} })),
  createAgent: (id: string) => body(client.POST('/wizard/sessions/{id}/agent', path(id))),
};
