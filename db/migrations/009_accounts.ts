import type { Knex } from 'knex';

// People and their access: accounts (argon2id passwords, optional TOTP), console sessions, memberships with a
// role per workspace, invitations by link, password resets, and the audit log of security and configuration
// events. Every token (session, CSRF, invitation, reset) is stored only as its SHA-256.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.text('email').notNullable().unique(); // lower-cased
    t.text('name').notNullable().defaultTo('');
    t.text('password_hash'); // argon2id; null for accounts that only sign in with single sign-on
    t.text('totp_secret'); // sealed with the service key; set once two-factor authentication is confirmed
    t.text('totp_pending'); // sealed; a secret shown to the user but not yet confirmed with a code
    t.jsonb('recovery_codes').notNullable().defaultTo('[]'); // SHA-256 of each unused one-time code
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('password_changed_at', { useTz: true });
    t.timestamp('deleted_at', { useTz: true }); // deleted: inaccessible, recoverable until erase_at
    t.timestamp('erase_at', { useTz: true });
  });

  await knex.schema.alterTable('workspaces', (t) => {
    t.timestamp('deleted_at', { useTz: true }); // with its only owner's account: inaccessible until recovered
    t.text('pending_plan'); // a downgrade waiting for the end of the billing period
    t.timestamp('plan_changes_at', { useTz: true });
  });

  await knex.schema.createTable('memberships', (t) => {
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('user_id').notNullable().references('users.id').onDelete('cascade');
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['workspace_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('sessions', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('cascade');
    t.text('token_hash').notNullable().unique();
    t.text('csrf_hash').notNullable();
    t.uuid('workspace_id').references('workspaces.id').onDelete('set null'); // the workspace the console shows
    t.text('ip');
    t.text('user_agent');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.index(['user_id']);
  });

  await knex.schema.createTable('invitations', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('role').notNullable();
    t.text('email'); // when set, only this address may accept
    t.text('token_hash').notNullable().unique();
    t.uuid('created_by').references('users.id').onDelete('set null');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.uuid('accepted_by').references('users.id').onDelete('set null');
    t.timestamp('revoked_at', { useTz: true });
    t.index(['workspace_id']);
  });

  await knex.schema.createTable('password_resets', (t) => {
    t.text('token_hash').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('cascade');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });

  // Single sign-on with OpenID Connect, per workspace (Enterprise plan).
  await knex.schema.createTable('workspace_sso', (t) => {
    t.uuid('workspace_id').primary().references('workspaces.id').onDelete('cascade');
    t.text('issuer').notNullable();
    t.text('client_id').notNullable();
    t.text('client_secret').notNullable(); // sealed with the service key
    t.text('email_domain').unique(); // people with this address domain are sent to this provider
    t.text('default_role').notNullable().defaultTo('viewer'); // for people who join by signing in
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // A sign-in on its way through the provider: PKCE verifier, nonce and where to go after. Minutes long.
  await knex.schema.createTable('sso_logins', (t) => {
    t.text('state_hash').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('code_verifier').notNullable(); // sealed
    t.text('nonce').notNullable();
    t.text('next').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id');
    t.uuid('workspace_id').references('workspaces.id').onDelete('cascade'); // null: an account's own event
    t.uuid('user_id').references('users.id').onDelete('cascade'); // the account it concerns, if any
    t.text('actor').notNullable(); // who: an account's email, an API key's name, "system"
    t.text('action').notNullable(); // what: login.succeeded, api_key.created, member.role_changed…
    t.text('target');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.text('ip'); // from which address
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'id']);
    t.index(['user_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => t.dropColumns('deleted_at', 'pending_plan', 'plan_changes_at'));
  for (const table of [
    'audit_events',
    'sso_logins',
    'workspace_sso',
    'password_resets',
    'invitations',
    'sessions',
    'memberships',
    'users',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
