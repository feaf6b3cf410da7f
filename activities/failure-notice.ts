// The error policy's notification: when a run ends failed, or with items that failed, one email goes to the
// address the policy names, with what failed and a link to the run. Once per run, however often retried.
import { appendRunLog } from '../db/run-progress';
import { loadRun, loadSpec, type ActivityDeps, type RunRow } from './deps';
import { externalToolHandlers } from './tools/handlers';

/** Sends the notice of a run whose row the caller has read. */
export function failureNotifier({ knex, config }: ActivityDeps) {
  return async (run: RunRow): Promise<'sent' | 'not_needed' | 'no_smtp'> => {
    const runId = run.id;
    if (run.trigger === 'test') return 'not_needed'; // a person trying an agent sees the result right there
    const to = (await loadSpec(knex, run.agent_id, run.agent_version)).policy.error_policy.notify_email;
    if (!to) return 'not_needed';
    const counts = await knex('runs').where({ id: runId }).first('status', 'failed', 'total', 'error');
    if (counts.status !== 'failed' && counts.failed === 0) return 'not_needed';
    const key = `notify:${runId}`;
    if (await knex('effects').where({ key }).first('key')) return 'sent';
    if (!config.smtp.url) {
      await appendRunLog(knex, [
        { run_id: runId, level: 'warn', message: `failure notice to ${to} not sent: no SMTP server (set SMTP_URL)` },
      ]);
      return 'no_smtp';
    }
    const agent = await knex('agents').where({ id: run.agent_id }).first('name');
    const failed = await knex('run_items')
      .where({ run_id: runId, status: 'failed' })
      .orderBy('seq')
      .limit(20)
      .select('seq', 'error');
    const link = `${config.web.publicUrl}/runs/${runId}`;
    const subject =
      counts.status === 'failed'
        ? `Cadre: a run of "${agent.name}" failed`
        : `Cadre: ${counts.failed} of ${counts.total} items failed in a run of "${agent.name}"`;
    const text = [
      `${subject}.`,
      ...(counts.error ? ['', `Why: ${counts.error}`] : []),
      ...(failed.length
        ? ['', `Failed items${counts.failed > failed.length ? ` (the first ${failed.length})` : ''}:`]
        : []),
      ...failed.map((i) => `  #${i.seq}: ${i.error}`),
      '',
      `The run: ${link}`,
    ].join('\n');
    await externalToolHandlers['email.send']!(
      { to, subject, text },
      { idempotencyKey: key, http: config.http, smtp: config.smtp },
    );
    await knex('effects')
      .insert({ key, run_id: runId, result: JSON.stringify({ to }) })
      .onConflict('key')
      .ignore();
    await appendRunLog(knex, [{ run_id: runId, level: 'info', message: `failure notice sent to ${to}` }]);
    return 'sent';
  };
}

export function createFailureNoticeActivities(deps: ActivityDeps) {
  const notify = failureNotifier(deps);
  return {
    notifyFailures: async ({ runId }: { runId: string }) => notify(await loadRun(deps.knex, runId)),
  };
}
