// An agent resumed from a pause: each of its event triggers that skips what was missed (`on_resume: skip_missed`)
// starts again from the position of its connection at the moment of the resume, read by a worker (the web may not
// reach the connected systems) while the resume waits. Written with the agent's state (db/agents.ts), so every event
// from the resume on starts a run, and none from the pause. A trigger whose position cannot be read in time starts
// from its first poll after the resume, as a new trigger does.
import { randomUUID } from 'node:crypto';
import type { TriggerRow } from '../db/triggers';
import { eventConfigSchema } from '../model/trigger';
import type { eventMark } from '../workflows/event-poll';
import type { ScheduleSyncDeps } from './sync';

/** How long a resume waits for a trigger's position. */
const markTimeout = '20 seconds';

export const skipsMissed = (t: Pick<TriggerRow, 'kind' | 'config'>) =>
  t.kind === 'event' && eventConfigSchema.safeParse(t.config).data?.on_resume === 'skip_missed';

/** The position of each skip_missed event trigger now, by trigger id: those that could not be read are left out. */
export async function resumePositions(deps: ScheduleSyncDeps, triggers: TriggerRow[]): Promise<Map<string, string>> {
  const marked = await Promise.all(
    triggers.filter(skipsMissed).map(async (t) => {
      const position = await deps.temporal.workflow
        .execute<typeof eventMark>('eventMark', {
          workflowId: `event-mark-${t.id}-${randomUUID()}`,
          taskQueue: deps.temporalConfig.taskQueue,
          args: [{ triggerId: t.id }],
          workflowExecutionTimeout: markTimeout,
        })
        .catch(() => null);
      return [t.id, position] as const;
    }),
  );
  return new Map(marked.filter((m): m is readonly [string, string] => typeof m[1] === 'string'));
}
