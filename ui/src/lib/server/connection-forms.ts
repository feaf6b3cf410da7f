// Reading the Integrations page's forms into what the API takes. Passwords, secrets and the MCP headers' values are
// read apart from the settings, so what goes back to a refused form can never carry them.
import { parse as parseYaml } from 'yaml';
import type { McpFormValues, OAuth2FormValues, OpenApiFormValues, SqlFormValues } from '$lib/connectors';
import type { NewConnection } from './connections-api';
import { formText } from './actions';

type SqlConfig = Extract<NewConnection, { kind: 'postgres' | 'mysql' }>['config'];
type McpConfig = Extract<NewConnection, { kind: 'mcp' }>['config'];
type OpenApiConfig = Extract<NewConnection, { kind: 'openapi' }>['config'];
type OAuth2Config = Extract<NewConnection, { kind: 'oauth2' }>['config'];

export function sqlValues(form: FormData): SqlFormValues {
  return {
    host: formText(form, 'host'),
    port: formText(form, 'port'),
    database: formText(form, 'database'),
    user: formText(form, 'user'),
    ssl: form.get('ssl') === 'on',
    allow_writes: form.get('allow_writes') === 'on',
    row_limit: formText(form, 'row_limit'),
    statement_timeout_ms: formText(form, 'statement_timeout_ms'),
  };
}

/** Blank numbers are left out (the API's defaults, or the saved value when editing); the API checks the rest. */
export function sqlConfig(v: SqlFormValues): SqlConfig {
  const num = (s: string) => (s === '' ? undefined : Number(s));
  const config: SqlConfig = {
    host: v.host,
    database: v.database,
    user: v.user,
    ssl: v.ssl,
    allow_writes: v.allow_writes,
  };
  if (num(v.port) !== undefined) config.port = num(v.port);
  if (num(v.row_limit) !== undefined) config.row_limit = num(v.row_limit);
  if (num(v.statement_timeout_ms) !== undefined) config.statement_timeout_ms = num(v.statement_timeout_ms);
  return config;
}

/** A password field is never trimmed: spaces may be part of it. */
export function passwordOf(form: FormData): string {
  const value = form.get('password');
  return typeof value === 'string' ? value : '';
}

export function mcpValues(form: FormData): McpFormValues {
  return {
    transport: formText(form, 'transport') === 'stdio' ? 'stdio' : 'http',
    url: formText(form, 'url'),
    header_names: form.getAll('header_name').map((n) => (typeof n === 'string' ? n.trim() : '')),
    server: formText(form, 'server'),
  };
}

/** Over HTTP a URL; over stdio only the name of a server the operator declares (never a command). */
export function mcpConfig(v: McpFormValues): McpConfig {
  return v.transport === 'http' ? { transport: 'http', url: v.url } : { transport: 'stdio', server: v.server };
}

/**
 * The headers typed in, by name (a row without a name is left out; values are never trimmed: they are secrets).
 * Undefined when no value was typed at all, which when editing keeps the saved headers.
 */
export function mcpHeadersOf(form: FormData): Record<string, string> | undefined {
  const names = form.getAll('header_name');
  const values = form.getAll('header_value');
  const headers: Record<string, string> = {};
  names.forEach((name, i) => {
    const value = values[i];
    if (typeof name === 'string' && name.trim() && typeof value === 'string' && value !== '')
      headers[name.trim()] = value;
  });
  return Object.keys(headers).length > 0 ? headers : undefined;
}

/** A form's choice among `allowed`, else the first of them. */
function choice<T extends string>(form: FormData, name: string, allowed: readonly T[]): T {
  const value = formText(form, name);
  return (allowed as readonly string[]).includes(value) ? (value as T) : allowed[0];
}

export function openApiValues(form: FormData): OpenApiFormValues {
  return {
    source: choice(form, 'source', ['url', 'document']),
    document_url: formText(form, 'document_url'),
    document: formText(form, 'document'),
    base_url: formText(form, 'base_url'),
    operations: formText(form, 'operations'),
    auth: choice(form, 'auth', ['none', 'api_key', 'bearer', 'basic', 'oauth2']),
    key_in: choice(form, 'key_in', ['header', 'query']),
    key_name: formText(form, 'key_name'),
    username: formText(form, 'username'),
    account: formText(form, 'account'),
  };
}

/** A pasted document that is neither JSON nor YAML of an object: said in words the form can show. */
export class DocumentTextError extends Error {}

/** The pasted OpenAPI document: JSON or YAML text (JSON is YAML too), as the object the API takes. */
function documentOf(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (e) {
    throw new DocumentTextError(`The document is neither JSON nor YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new DocumentTextError('The document must be an OpenAPI document: an object with "openapi" and "paths".');
  return parsed as Record<string, unknown>;
}

/**
 * The settings to send. When editing (`keep`), a blank pasted document keeps the saved one, and blank operations keep
 * the saved list. Throws DocumentTextError for pasted text that is no document.
 */
export function openApiConfig(v: OpenApiFormValues, keep = false): OpenApiConfig {
  const config: OpenApiConfig = { auth: openApiAuth(v) };
  if (v.source === 'url') config.document_url = v.document_url;
  else if (v.document !== '' || !keep) config.document = documentOf(v.document);
  if (v.base_url !== '') config.base_url = v.base_url;
  const operations = v.operations
    .split(/[\s,]+/)
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (operations.length > 0) config.operations = operations;
  return config;
}

function openApiAuth(v: OpenApiFormValues): NonNullable<OpenApiConfig['auth']> {
  switch (v.auth) {
    case 'api_key':
      return { type: 'api_key', in: v.key_in, name: v.key_name };
    case 'basic':
      return { type: 'basic', username: v.username };
    case 'oauth2':
      return { type: 'oauth2', connection: v.account };
    default:
      return { type: v.auth };
  }
}

/** The key, token or password an API's auth sends: never trimmed; undefined when none was typed. */
export function secretOf(form: FormData): string | undefined {
  const value = form.get('secret');
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function oauth2Values(form: FormData): OAuth2FormValues {
  return {
    discovery: choice(form, 'discovery', ['issuer', 'endpoints']),
    issuer: formText(form, 'issuer'),
    authorization_endpoint: formText(form, 'authorization_endpoint'),
    token_endpoint: formText(form, 'token_endpoint'),
    revocation_endpoint: formText(form, 'revocation_endpoint'),
    client_id: formText(form, 'client_id'),
    scopes: formText(form, 'scopes'),
    audience: formText(form, 'audience'),
  };
}

export function oauth2Config(v: OAuth2FormValues): OAuth2Config {
  const common = {
    client_id: v.client_id,
    scopes: v.scopes.split(/[\s,]+/).filter((s) => s !== ''),
    ...(v.audience ? { audience: v.audience } : {}),
  };
  if (v.discovery === 'issuer') return { issuer: v.issuer, ...common };
  return {
    authorization_endpoint: v.authorization_endpoint,
    token_endpoint: v.token_endpoint,
    ...(v.revocation_endpoint ? { revocation_endpoint: v.revocation_endpoint } : {}),
    ...common,
  };
}

/** The client secret, never trimmed; undefined when none was typed (a public client, or keeping the saved one). */
export function clientSecretOf(form: FormData): string | undefined {
  const value = form.get('client_secret');
  return typeof value === 'string' && value !== '' ? value : undefined;
}
