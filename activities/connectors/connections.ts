// Finds the connection a tool call names and hands its connector a client: only connections the agent lists in
// "connections", only connected ones, with the credentials opened here and nowhere else.
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import type { CadreConfig } from '../../cadre.config';
import { connectionByName, markConnectionUsed, type ConnectionRow } from '../../db/connections';
import { loadSecretBox, type SecretBox } from '../../db/secret-box';
import {
  connectionSchemas,
  defaultPorts,
  isSqlKind,
  type McpCredentials,
  type OpenApiConfig,
  type OpenApiCredentials,
  type SqlConfig,
  type SqlKind,
  type StoredMcpConfig,
} from '../../model/connection';
import { blockedCause, BlockedAddressError, publicAddress } from '../tools/ssrf-guard';
import { buildSqlClient, sqlClientFor, type SqlClient } from './sql/client';
import { connectMcp, mcpConnectionFor, McpSetupError, type McpSession } from './mcp/client';

// One box per configuration (a worker has one; the test suites run several stacks in a process).
const boxes = new WeakMap<CadreConfig, SecretBox>();

export type Deps = { knex: Knex; config: CadreConfig };
/**
 * Who uses a connection: a run (of a workspace) or, for an event trigger's poller, the workspace itself; and the
 * connections its agent or trigger may use.
 */
export type RunConnections = ({ runId: string } | { workspaceId: string }) & { connections: readonly string[] };

export function secretBoxOf(config: CadreConfig): SecretBox {
  let box = boxes.get(config);
  if (!box) boxes.set(config, (box = loadSecretBox(config)));
  return box;
}

/** A connection's credentials, opened with the service key and checked against its kind's schema. */
export function credentialsOf(config: CadreConfig, row: ConnectionRow): unknown {
  return connectionSchemas[row.kind].credentials.parse(JSON.parse(secretBoxOf(config).open(row.credentials_sealed)));
}

/** The connected connection `name` of the run's workspace, which the agent lists; otherwise a step error saying why. */
export async function usableConnection(deps: Deps, run: RunConnections, name: string): Promise<ConnectionRow> {
  if (!run.connections.includes(name))
    throw ApplicationFailure.nonRetryable(
      `the agent does not list the connection "${name}" in its "connections": add it in Operator Mode`,
      'ConnectionNotListed',
    );
  const workspace_id =
    'workspaceId' in run
      ? run.workspaceId
      : ((await deps.knex('runs').where({ id: run.runId }).first('workspace_id')) as { workspace_id: string })
          .workspace_id;
  const row = await connectionByName(deps.knex, workspace_id, name);
  if (!row)
    throw ApplicationFailure.nonRetryable(
      `there is no connection "${name}" in this workspace (it was removed or never made): connect it in Integrations`,
      'ConnectionMissing',
    );
  if (row.status === 'pending_authorization')
    throw ApplicationFailure.nonRetryable(
      `connection "${name}" is not authorized yet: authorize it in Integrations`,
      'ConnectionUnusable',
    );
  if (row.status === 'revoked' || row.status === 'needs_reauthorization')
    throw ApplicationFailure.nonRetryable(
      `connection "${name}" ${row.status === 'revoked' ? 'was revoked' : 'needs to be authorized again'}: reconnect it in Integrations`,
      'ConnectionUnusable',
    );
  await markConnectionUsed(deps.knex, row.id);
  return row;
}

const versionKey = (row: ConnectionRow) => `${row.id}:${new Date(row.updated_at).toISOString()}`;

export function wrongKind(name: string, row: ConnectionRow, wanted: string): never {
  throw ApplicationFailure.nonRetryable(`connection "${name}" is ${row.kind}, not ${wanted}`, 'ConnectionKind');
}

export function sqlClientResolver(deps: Deps, run: RunConnections): (name: string) => Promise<SqlClient> {
  return async (name) => {
    const row = await usableConnection(deps, run, name);
    if (!isSqlKind(row.kind)) wrongKind(name, row, 'a SQL database');
    const config = row.config as SqlConfig;
    const address = await publicAddress(
      config.host,
      config.port ?? defaultPorts[row.kind],
      deps.config.http.allowHosts,
    ).catch((err: unknown) => {
      if (!(err instanceof BlockedAddressError)) throw err;
      throw ApplicationFailure.nonRetryable(`connection "${name}": ${err.message}`, 'ConnectionRefused');
    });
    // A pool per checked address: its connections go there and nowhere else; a host that moves gets a new pool.
    return sqlClientFor(`${versionKey(row)}@${address}`, () => {
      const { password } = credentialsOf(deps.config, row) as { password: string };
      return buildSqlClient(row.kind as SqlKind, config, password, address);
    });
  };
}

/** A REST API connection's settings and opened credentials, for its operations' calls. */
export function openApiResolver(
  deps: Deps,
  run: RunConnections,
): (name: string) => Promise<{ config: OpenApiConfig; credentials: OpenApiCredentials }> {
  return async (name) => {
    const row = await usableConnection(deps, run, name);
    if (row.kind !== 'openapi') wrongKind(name, row, 'a REST API');
    return { config: row.config as OpenApiConfig, credentials: credentialsOf(deps.config, row) as OpenApiCredentials };
  };
}

/**
 * A session with the MCP server of connection `name`, kept per connection version; a session the server lost (it
 * restarted, its process exited) is opened again once within a call, and the run's log says so.
 */
export function mcpClientResolver(deps: Deps, run: RunConnections): (name: string) => Promise<McpSession> {
  return async (name) => {
    const row = await usableConnection(deps, run, name);
    if (row.kind !== 'mcp') wrongKind(name, row, 'an MCP server');
    const connection = mcpConnectionFor(versionKey(row), () =>
      connectMcp(row.config as StoredMcpConfig, credentialsOf(deps.config, row) as McpCredentials, {
        allowHosts: deps.config.http.allowHosts,
        mcpStdio: deps.config.mcp,
      }).catch((err: unknown) => {
        const reason = err instanceof Error ? err.message : String(err);
        // A refused address, a server the operator does not declare, a command: the connection's settings, not a
        // passing fault.
        const blocked = blockedCause(err);
        if (blocked || err instanceof McpSetupError)
          throw ApplicationFailure.nonRetryable(
            `connection "${name}": ${blocked?.message ?? reason}`,
            'ConnectionRefused',
          );
        throw ApplicationFailure.retryable(
          `connection "${name}" cannot reach its MCP server: ${reason}`,
          'McpUnreachable',
        );
      }),
    );
    const reopened = (why: string) => {
      if ('runId' in run)
        void deps
          .knex('run_logs')
          .insert({ run_id: run.runId, level: 'warn', message: `connection "${name}": ${why}` })
          .catch(() => {}); // the call goes on whether or not the line is written
    };
    return { use: (fn) => connection.use(fn, reopened) };
  };
}
