// What GET /readyz checks, and what `npm start` waits for before it says "Cadre is running": the database and
// Temporal answer, and a worker polls the run task queue. Without a worker a run started now would wait in the queue
// until one comes, which at a start can be minutes (the worker bundles its workflows before it polls).
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';

export interface Readiness {
  postgres: boolean;
  temporal: boolean;
  /** A worker polls the task queue for workflow tasks (absent: not checked). */
  worker?: boolean;
}

// temporal.api.enums.v1 (@temporalio/proto, which the client brings but the app does not depend on by name).
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_WORKFLOW = 1;

/** No check waits longer than this: a Temporal that does not answer is not ready. */
const checkTimeoutMs = 5_000;

/**
 * Whether a worker (the one of `identity`, if given) polls `taskQueue` for workflow tasks: Temporal's
 * DescribeTaskQueue lists the pollers it has seen recently (a worker that stopped stays listed a few minutes).
 */
export async function workerPolls(client: Client, taskQueue: string, identity?: string): Promise<boolean> {
  const described = await client.connection.withDeadline(Date.now() + checkTimeoutMs, () =>
    client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: taskQueue, kind: TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
    }),
  );
  return (described.pollers ?? []).some((p) => identity === undefined || p.identity === identity);
}

/** The live checks of /readyz. */
export function readinessChecks(deps: { knex: Knex; temporal: Client; taskQueue: string }): () => Promise<Readiness> {
  const ok = (check: Promise<unknown>) =>
    check.then(
      () => true,
      () => false,
    );
  return async () => {
    const [postgres, temporal, worker] = await Promise.all([
      ok(deps.knex.raw('select 1')),
      ok(
        deps.temporal.connection.withDeadline(Date.now() + checkTimeoutMs, () =>
          deps.temporal.workflowService.getSystemInfo({}),
        ),
      ),
      workerPolls(deps.temporal, deps.taskQueue).catch(() => false),
    ]);
    return { postgres, temporal, worker };
  };
}

/** What /readyz says is missing, one phrase per failed check. */
export function readinessDetail(checks: Readiness, taskQueue: string): string | undefined {
  const missing = [
    checks.postgres ? undefined : 'the database does not answer',
    checks.temporal ? undefined : 'Temporal does not answer',
    checks.worker === false
      ? `no worker polls the task queue "${taskQueue}" (runs would wait in it until one does)`
      : undefined,
  ].filter((m) => m !== undefined);
  return missing.length > 0 ? missing.join('; ') : undefined;
}
