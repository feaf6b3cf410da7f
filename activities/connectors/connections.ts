// Finds the connection a tool call names and hands its connector a client: only connections the agent lists in
// "connections", only connected ones, with the credentials opened here and nowhere else.
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import type { CadreConfig } from '../../cadre.config';
import { connectionByName, markConnectionUsed } from '../../db/connections';
import { loadSecretBox, type SecretBox } from '../../db/secret-box';
import { sqlConfigSchema, sqlCredentialsSchema } from '../../model/connection';
import { buildSqlClient, sqlClientFor, type SqlClient } from './sql/client';

// One box per configuration (a worker has one; the test suites run several stacks in a process).
const boxes = new WeakMap<CadreConfig, SecretBox>();

export function sqlClientResolver(
  deps: { knex: Knex; config: CadreConfig },
  run: { runId: string; connections: readonly string[] },
): (name: string) => Promise<SqlClient> {
  return async (name) => {
    if (!run.connections.includes(name))
      throw ApplicationFailure.nonRetryable(
        `the agent does not list the connection "${name}" in its "connections": add it in Operator Mode`,
        'ConnectionNotListed',
      );
    const { workspace_id } = await deps.knex('runs').where({ id: run.runId }).first('workspace_id');
    const row = await connectionByName(deps.knex, workspace_id, name);
    if (!row)
      throw ApplicationFailure.nonRetryable(
        `there is no connection "${name}" in this workspace (it was removed or never made): connect it in Integrations`,
        'ConnectionMissing',
      );
    if (row.status === 'revoked' || row.status === 'needs_reauthorization')
      throw ApplicationFailure.nonRetryable(
        `connection "${name}" ${row.status === 'revoked' ? 'was revoked' : 'needs to be authorized again'}: reconnect it in Integrations`,
        'ConnectionUnusable',
      );
    const client = sqlClientFor(`${row.id}:${new Date(row.updated_at).toISOString()}`, () => {
      let box = boxes.get(deps.config);
      if (!box) boxes.set(deps.config, (box = loadSecretBox(deps.config)));
      const { password } = sqlCredentialsSchema.parse(JSON.parse(box.open(row.credentials_sealed)));
      return buildSqlClient(row.kind, sqlConfigSchema.parse(row.config), password);
    });
    await markConnectionUsed(deps.knex, row.id);
    return client;
  };
}
