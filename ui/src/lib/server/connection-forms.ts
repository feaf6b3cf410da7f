// Reading the Integrations page's forms into what the API takes. The password and the MCP headers' values are read
// apart from the settings, so what goes back to a refused form can never carry them.
import type { McpFormValues, SqlFormValues } from '$lib/connectors';
import type { NewConnection } from './connections-api';
import { formText } from './actions';

type SqlConfig = Exclude<NewConnection, { kind: 'mcp' }>['config'];
type McpConfig = Extract<NewConnection, { kind: 'mcp' }>['config'];

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
    command: formText(form, 'command'),
    args: formText(form, 'args'),
  };
}

export function mcpConfig(v: McpFormValues): McpConfig {
  if (v.transport === 'http') return { transport: 'http', url: v.url };
  const args = v.args
    .split(/\r?\n/)
    .map((a) => a.trim())
    .filter((a) => a !== '');
  return { transport: 'stdio', command: v.command, args };
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
