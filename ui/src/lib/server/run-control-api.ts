// The console's calls for retrying failed items and testing a version on past items (through the API only).
import { body, client } from './api';

export const runControlApi = {
  retryFailed: (id: string) =>
    body(client.POST('/runs/{id}/retry', { params: { path: { id } }, body: { items: 'failed' } })),
  testOnPastItems: (agentId: string, version: number, last = 20) =>
    body(client.POST('/agents/{id}/test-runs', { params: { path: { id: agentId } }, body: { version, last } })),
  testRun: (agentId: string, runId: string) =>
    body(client.GET('/agents/{id}/test-runs/{runId}', { params: { path: { id: agentId, runId } } })),
};
