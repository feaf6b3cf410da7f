// Integrations: the workspace's connections as the console reads and changes them (DESIGN.md convention 10).
// Credentials only ever go in; the API never answers them.
import type { paths, Schemas } from '$api/client';
import { allPages, body, cleanQuery, client, done } from './api';

export type Connection = Schemas['Connection'];
export type ConnectionTool = Schemas['ConnectionTool'];
export type NewConnection = paths['/connections']['post']['requestBody']['content']['application/json'];
export type ConnectionChange = paths['/connections/{id}']['patch']['requestBody']['content']['application/json'];

export const connectionsApi = {
  list: async () =>
    (
      await allPages((cursor) =>
        body(client.GET('/connections', { params: { query: cleanQuery({ limit: 500, cursor }) } })),
      )
    ).data,
  /** The connectors (email, storage, chat, CRM, payments, calendar, warehouse) with their settings' schemas. */
  connectors: async () => (await body(client.GET('/connectors'))).data,
  /** The stdio MCP servers the operator declares, which an MCP connection picks by name. */
  mcpServers: async () => (await body(client.GET('/mcp-servers'))).data,
  create: (connection: NewConnection) => body(client.POST('/connections', { body: connection })),
  update: (id: string, change: ConnectionChange) =>
    body(client.PATCH('/connections/{id}', { params: { path: { id } }, body: change })),
  tools: async (id: string) => (await body(client.GET('/connections/{id}/tools', { params: { path: { id } } }))).data,
  /** A new link to the provider's consent page, for an oauth2 connection (to authorize it first, or again). */
  authorize: async (id: string) =>
    (await body(client.POST('/connections/{id}/authorize', { params: { path: { id } } }))).authorization_url,
  test: (id: string) => body(client.POST('/connections/{id}/test', { params: { path: { id } } })),
  remove: (id: string) => done(client.DELETE('/connections/{id}', { params: { path: { id } } })),
};
