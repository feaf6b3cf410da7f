// What the connector suites share: the API called with a workspace key (every answer checked against the OpenAPI
// document), live agents run on items, and the approvals their writes wait on.
import assert from 'node:assert/strict';
import { checkedFetch } from './openapi-check';
import { createLiveAgent, startTestRun, type Harness } from './harness';
import { scheduleIdOf } from '../../schedules/sync';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ConnectorApi {
  call(method: string, url: string, json?: unknown): Promise<{ status: number; body: Json }>;
  /** Makes a connection and fails the test, showing the answer, unless it was made. */
  connect(name: string, kind: string, config: Json, credentials?: Json): Promise<Json>;
  /** Starts a live agent of `spec` on `input` (its items). */
  runOf(spec: Json, input: unknown[]): Promise<{ agent: Json; started: Json }>;
  /** The first pending approval of the run, once there is one. */
  waitForApproval(runId: string): Promise<Json>;
  decide(approvalId: string, decision: 'approve' | 'reject'): Promise<void>;
}

export function connectorApi(h: Harness, apiUrl: string, key: string, workspaceId: string): ConnectorApi {
  const call: ConnectorApi['call'] = async (method, url, json) => {
    const res = await checkedFetch(`${apiUrl}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (res.status === 204 ? {} : await res.json()) as Json };
  };
  return {
    call,
    async connect(name, kind, config, credentials) {
      const made = await call('POST', '/connections', { name, kind, config, credentials });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body;
    },
    async runOf(spec, input) {
      const agent = await createLiveAgent(h, workspaceId, spec);
      const started = await startTestRun(h, workspaceId, agent.id, JSON.stringify(input));
      return { agent, started };
    },
    async waitForApproval(runId) {
      for (let i = 0; i < 600; i++) {
        const list = await call('GET', `/approvals?run_id=${runId}&status=pending`);
        if (list.body.data.length > 0) return list.body.data[0];
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`no approval came for run ${runId}`);
    },
    async decide(approvalId, decision) {
      const res = await call('POST', `/approvals/${approvalId}/decision`, { decision });
      assert.ok(res.status < 300, JSON.stringify(res.body));
    },
  };
}

/**
 * Fires an event trigger's poller schedule now (as its interval would) and answers that poll's result ("2 events, 2
 * runs started"), or its failure as an Error.
 */
export async function pollNow(h: Harness, trigger: Json): Promise<string | Error> {
  const handle = h.client.schedule.getHandle(scheduleIdOf(trigger as { id: string; agent_id: string }));
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  for (let i = 0; i < 300; i++) {
    const actions = (await handle.describe()).info.recentActions;
    if (actions.length > before) {
      const { workflowId, firstExecutionRunId } = actions.at(-1)!.action.workflow;
      return h.client.workflow
        .getHandle(workflowId, firstExecutionRunId)
        .result()
        .catch((e: Error) => e);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the poll did not happen');
}
