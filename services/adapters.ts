// What the web process reaches beyond itself through code that lives with the worker's (activities/): a
// connection's system, an OAuth 2.0 provider, the sources' search (an embedding model), a document's page pictures,
// the SMTP server. The composition root builds them (scripts/api-adapters.ts, for scripts/web.ts and the tests'
// apps alike) and hands them to createApp, so api/ names this contract and never imports activities/.
import type { Knex } from 'knex';
import type { Configuration } from 'openid-client';
import type {
  CheckedConnection,
  ConnectionFound,
  ConnectionKind,
  ConnectionTool,
  ConnectorLimits,
  McpLimits,
  OAuth2Config,
  OAuth2Tokens,
} from '../model/connection';
import type { RetrievedPassage, RetrieveRequest } from '../model/retrieval';

/** Connecting to a connection's system the way a run would (activities/connectors/check.ts). */
export interface ConnectionAdapters {
  /** What a connection with these settings reaches, or the reason it does not (McpServerStartError among them). */
  check(
    kind: ConnectionKind,
    config: unknown,
    credentials: unknown,
    limits: ConnectorLimits,
    of?: CheckedConnection,
  ): Promise<ConnectionFound>;
  /** The settings to store: what a kind fetches once when the connection is made (a REST API's document). */
  complete(
    kind: ConnectionKind,
    config: Record<string, unknown>,
    limits: ConnectorLimits,
  ): Promise<Record<string, unknown>>;
  /** The tools a connection offers its agents (an MCP server is asked). */
  listTools(
    connection: { name: string; kind: ConnectionKind; config: unknown },
    credentials: unknown,
    limits: McpLimits,
  ): Promise<ConnectionTool[]>;
}

/** An oauth2 connection's provider, every request through the SSRF guard (activities/connectors/oauth/provider.ts). */
export interface OAuthAdapters {
  provider(config: OAuth2Config, clientSecret: string, allowHosts: readonly string[]): Promise<Configuration>;
  /** RFC 7009; false when the provider has no revocation endpoint. */
  revokeTokens(provider: Configuration, tokens: OAuth2Tokens): Promise<boolean>;
}

/** Reading a workspace's sources (activities/sources/). */
export interface SourceAdapters {
  /** Searches as a retrieve node would; a remote embedding provider's failure is an EmbeddingProviderError. */
  retrieve(knex: Knex, req: RetrieveRequest): Promise<RetrievedPassage[]>;
  /** The picture of a document's page (PNG or JPEG), drawn when it was not kept; undefined for a file without pages. */
  pagePicture(knex: Knex, documentId: string, page: number): Promise<Buffer | undefined>;
}

/** One message through the SMTP server the operator configured (the email tool's sender). */
export type MailSender = (
  smtp: { url: string; from: string },
  message: { to: string; subject: string; text: string; key: string },
) => Promise<void>;

export interface Adapters {
  connections: ConnectionAdapters;
  oauth: OAuthAdapters;
  sources: SourceAdapters;
  mail: MailSender;
}

/**
 * A declared stdio MCP server that failed to start or to answer; its message ends with the end of the server's
 * stderr, which the API keeps when it says why a connection failed.
 */
export class McpServerStartError extends Error {}

/** The provider could not embed: unreachable, refused (a wrong key, a quota) or answered something unusable. */
export class EmbeddingProviderError extends Error {
  readonly name = 'EmbeddingProviderError';
}
