// What a connection's tools are and may do, from its settings alone: the editor's list of a connector's tools and
// the words a person checks before giving a connection to an agent. Pure, for the API's answers and the worker's checks.
import type { ToolDefinition } from './tool-definition';
import { connectorOf, isConnectorKind, type ConnectorKind } from './connectors';
import { isSqlKind, type ConnectionKind, type OAuth2Config, type OpenApiConfig, type SqlConfig } from './connection';
import { openApiOperations } from './openapi-document';

/** The tools a connector's connection offers with these settings (a read-only one, fewer). */
export function connectorToolsOf(kind: ConnectorKind, config: unknown): ToolDefinition[] {
  const definition = connectorOf(kind);
  const names = definition.toolsFor?.(config) ?? Object.keys(definition.tools);
  return names.map((name) => definition.tools[name]);
}

/** What a connection's tools may do, in words a person can check before giving it to an agent. */
export function connectionAbilities(kind: ConnectionKind, config: unknown): string[] {
  // `email.download_attachments` → "download attachments"; a write says that it waits for a reviewer by default.
  if (isConnectorKind(kind))
    return connectorToolsOf(kind, config).map(
      (t) => `${t.name.split('.')[1].replaceAll('_', ' ')}${t.approvalDefault === 'always' ? ' (asks approval)' : ''}`,
    );
  if (isSqlKind(kind))
    return ['list tables', 'read rows', ...((config as SqlConfig).allow_writes ? ['insert rows', 'update rows'] : [])];
  if (kind === 'openapi') {
    const api = config as OpenApiConfig;
    try {
      return openApiOperations(api.document ?? {}, api.operations).map(
        (op) => `${op.method.toUpperCase()} ${op.path} (${op.id})`,
      );
    } catch {
      return []; // a stored document was checked when it was saved; listing must not fail on it
    }
  }
  if (kind === 'oauth2')
    return [
      `act at the provider as the account that authorized it, within its scopes (${(config as OAuth2Config).scopes.join(' ') || 'none asked'})`,
    ];
  return ["call the server's tools (each asks for approval unless the agent's policy says otherwise)"];
}
