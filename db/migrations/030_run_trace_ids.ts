import type { Knex } from 'knex';

// The OpenTelemetry trace a run started in (the API request, webhook delivery, schedule fire, event poll or mail
// that opened it), so run details can link to it in the operator's tracing backend. Null when tracing is off.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.string('trace_id', 32);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.dropColumn('trace_id');
  });
}
