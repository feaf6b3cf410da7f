// Opens the connection a connector's tool call names: only one the agent lists, connected, of the tool's kind, with
// its credentials opened here and the token of the oauth2 account it acts through at hand.
import type { CadreConfig } from '../../cadre.config';
import { connectorOf, type ConnectorKind } from '../../model/connectors';
import { credentialsOf, usableConnection, wrongKind, type Deps, type RunConnections } from './connections';
import { oauthAccessToken } from './oauth/tokens';
import type { OpenedConnection } from './connector';
import type { ConnectorLimits } from '../../model/connection';

export const connectorLimitsOf = (config: CadreConfig): ConnectorLimits => ({
  allowHosts: config.http.allowHosts,
  mcpStdio: config.mcp,
  warehouseDirs: config.warehouse.dirs,
});

export type OpenConnection = (kind: ConnectorKind, name: string) => Promise<OpenedConnection>;

export function connectionOpener(deps: Deps, run: RunConnections): OpenConnection {
  return async (kind, name) => {
    const row = await usableConnection(deps, run, name);
    const definition = connectorOf(kind);
    if (row.kind !== kind) wrongKind(name, row, definition.label);
    const config = definition.config.parse(row.config);
    const account = definition.account?.(config);
    const sentTo = definition.tokenDestination?.(config);
    return {
      name,
      kind,
      config,
      credentials: credentialsOf(deps.config, row),
      version: `${row.id}:${new Date(row.updated_at).toISOString()}`,
      limits: { ...connectorLimitsOf(deps.config), workspaceId: row.workspace_id },
      // The account acts for this connection: this connection's own use is what lets the run use that one.
      accountToken:
        account === undefined
          ? undefined
          : (opts) => oauthAccessToken(deps, { ...run, connections: [account] }, account, { ...opts, sentTo }),
    };
  };
}
