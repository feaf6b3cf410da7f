import type { Knex } from 'knex';

// Who saved each version: a person's email or an API key's name, so a save refused for being made on an older
// version can say who saved the newer one (PUT /v1/agents/:id?base_version=). Null for versions saved before.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => {
    t.text('saved_by');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => {
    t.dropColumn('saved_by');
  });
}
