// Reading the Integrations page's forms into what the API takes. The password is read apart from the settings, so
// what goes back to a refused form can never carry it.
import type { SqlFormValues } from '$lib/connectors';
import type { NewConnection } from './connections-api';
import { formText } from './actions';

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
export function sqlConfig(v: SqlFormValues): NewConnection['config'] {
  const num = (s: string) => (s === '' ? undefined : Number(s));
  const config: NewConnection['config'] = {
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
