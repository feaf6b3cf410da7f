import type { Knex } from 'knex';
import * as initial from './migrations/001_initial';
import * as triggers from './migrations/002_triggers';
import * as runLinks from './migrations/005_run_links';
import * as modelApprovals from './migrations/006_model_approvals';
import * as runParents from './migrations/007_run_parents';
import * as sources from './migrations/008_sources';
import * as accounts from './migrations/009_accounts';
import * as runCitations from './migrations/010_run_citations';
import * as voyageEmbeddings from './migrations/011_voyage_embeddings';
import * as sourceAuth from './migrations/012_source_auth';
import * as deliveryBatches from './migrations/013_delivery_batches';
import * as itemReviews from './migrations/014_item_reviews';
import * as rateLimits from './migrations/015_rate_limits';
import * as connections from './migrations/016_connections';
import * as skills from './migrations/017_skills';
import * as connectionAuthorizations from './migrations/018_connection_authorizations';
import * as eventTriggers from './migrations/019_event_triggers';
import * as inbox from './migrations/020_inbox';
import * as chat from './migrations/021_chat';
import * as wizardSessions from './migrations/022_wizard_sessions';
import * as inboxAuthentication from './migrations/023_inbox_authentication';
import * as inboxMailboxThreads from './migrations/024_inbox_mailbox_threads';
import * as runStartPending from './migrations/025_run_start_pending';
import * as connectionToolLists from './migrations/026_connection_tool_lists';
import * as runFiredAt from './migrations/027_run_fired_at';
import * as triggerEvents from './migrations/028_trigger_events';
import * as retriesAndTestRuns from './migrations/029_retries_and_test_runs';
import * as runTraceIds from './migrations/030_run_trace_ids';
import * as apiKeyExpiry from './migrations/031_api_key_expiry';
import * as passageContext from './migrations/032_passage_context';
import * as agentVersionAuthors from './migrations/033_agent_version_authors';

// Migrations are imported modules rather than files knex discovers, so they run the same under tsx, a
// compiled build or a bundler. Append new ones; never edit a released one.
const migrations: Record<string, { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> }> = {
  '001_initial': initial,
  '002_triggers': triggers,
  '005_run_links': runLinks,
  '006_model_approvals': modelApprovals,
  '007_run_parents': runParents,
  '008_sources': sources,
  '009_accounts': accounts,
  '010_run_citations': runCitations,
  '011_voyage_embeddings': voyageEmbeddings,
  '012_source_auth': sourceAuth,
  '013_delivery_batches': deliveryBatches,
  '014_item_reviews': itemReviews,
  '015_rate_limits': rateLimits,
  '016_connections': connections,
  '017_skills': skills,
  '018_connection_authorizations': connectionAuthorizations,
  '019_event_triggers': eventTriggers,
  '020_inbox': inbox,
  '021_chat': chat,
  '022_wizard_sessions': wizardSessions,
  '023_inbox_authentication': inboxAuthentication,
  '024_inbox_mailbox_threads': inboxMailboxThreads,
  '025_run_start_pending': runStartPending,
  '026_connection_tool_lists': connectionToolLists,
  '027_run_fired_at': runFiredAt,
  '028_trigger_events': triggerEvents,
  '029_retries_and_test_runs': retriesAndTestRuns,
  '030_run_trace_ids': runTraceIds,
  '031_api_key_expiry': apiKeyExpiry,
  '032_passage_context': passageContext,
  '033_agent_version_authors': agentVersionAuthors,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};

export class MissingVectorExtensionError extends Error {}

/** Brings the schema up to date; safe to run at every start and from several processes at once. */
export async function migrate(knex: Knex): Promise<string[]> {
  const available = await knex.raw(`select 1 from pg_available_extensions where name = 'vector'`);
  if (available.rows.length === 0) {
    throw new MissingVectorExtensionError(
      'the Postgres at DATABASE_URL has no pgvector extension ("vector"): install pgvector on that server (for example the pgvector/pgvector image) or unset DATABASE_URL to use the embedded database',
    );
  }
  // Several web processes start at once: one migrates while the others wait for it, however long it takes on a busy
  // machine, on a session lock the server releases should that process die with its connection.
  const connection = await knex.client.acquireConnection();
  try {
    await knex.raw('select pg_advisory_lock(?)', [migrationLockKey]).connection(connection);
    try {
      return await migrateLatest(knex);
    } finally {
      await knex.raw('select pg_advisory_unlock(?)', [migrationLockKey]).connection(connection);
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/** The advisory lock Cadre's processes migrate under (an arbitrary key of Cadre's own). */
export const migrationLockKey = 0x43616472; // "Cadr"

async function migrateLatest(knex: Knex): Promise<string[]> {
  // Under the advisory lock, knex's own lock is held only by a process of a Cadre from before it (or one that
  // stopped while migrating), and its tables' first creation cannot race: wait a minute for it, then say so.
  for (let waited = 0; ; waited += 500) {
    try {
      const [, applied] = await knex.migrate.latest({ migrationSource: source });
      return applied as string[];
    } catch (err) {
      const e = err as { name?: string; code?: string };
      const raced = e.name === 'MigrationLocked' || e.code === '23505' || e.code === '42P07';
      if (!raced) throw err;
      if (waited >= 60_000)
        throw new Error(
          'the schema migration lock has been held for a minute: if no other Cadre process is starting, one stopped while migrating; check the schema, then release the lock with "update knex_migrations_lock set is_locked = 0"',
          { cause: err },
        );
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
