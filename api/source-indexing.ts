// Adding a source version from uploaded bytes and starting its indexing workflow: the sources API and the
// creation wizard (files given with a goal become sources) share it.
import type { VersionRow } from '../db/sources';
import type { indexSource } from '../workflows/index-source';
import type { RunServiceDeps } from '../services/runs/start';

/** Starts indexing a new version; when Temporal refuses, the version is marked failed with why. */
export async function startSourceIndexing(deps: RunServiceDeps, version: VersionRow): Promise<void> {
  try {
    await deps.temporal.workflow.start<typeof indexSource>('indexSource', {
      taskQueue: deps.temporalConfig.taskQueue,
      workflowId: version.workflow_id!,
      args: [{ versionId: version.id }],
    });
  } catch (err) {
    await deps
      .knex('source_versions')
      .where({ id: version.id })
      .update({ status: 'failed', error: `indexing could not start: ${(err as Error).message}` });
    throw err;
  }
}
