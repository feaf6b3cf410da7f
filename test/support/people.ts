// A person using the API the way the console does: a session cookie, and the CSRF token echoed on changes.
// Every answer is checked against the OpenAPI document.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { addMember, createUser } from '../../db/accounts';
import type { Role } from '../../db/roles';
import { checkedFetch } from './openapi-check';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
type Json = any;

export interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

export class Person {
  cookies = new Map<string, string>();
  /** Sent as X-CSRF-Token; a test can blank it to see the refusal. */
  csrf: string | undefined;

  constructor(
    readonly baseUrl: string,
    readonly email = `p-${randomUUID().slice(0, 8)}@example.test`,
    readonly password = 'correct horse battery',
  ) {}

  async call(path: string, init: { method?: string; json?: unknown; csrf?: boolean } = {}): Promise<Answer> {
    const method = init.method ?? (init.json !== undefined ? 'POST' : 'GET');
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    if (this.csrf && init.csrf !== false) headers['x-csrf-token'] = this.csrf;
    const res = await checkedFetch(`${this.baseUrl}/v1${path}`, {
      method,
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    if (this.cookies.has('cadre_csrf')) this.csrf = decodeURIComponent(this.cookies.get('cadre_csrf')!);
    const type = res.headers.get('content-type') ?? '';
    return {
      status: res.status,
      body: type.includes('json') ? await res.json() : await res.text(),
      headers: res.headers,
    };
  }

  signUp(extra: Record<string, unknown> = {}) {
    return this.call('/auth/signup', { json: { email: this.email, password: this.password, ...extra } });
  }

  signIn(extra: Record<string, unknown> = {}) {
    return this.call('/auth/login', { json: { email: this.email, password: this.password, ...extra } });
  }
}

/** An account with the given role in a workspace, made in the database, then signed in over HTTP. */
export async function memberWithRole(knex: Knex, baseUrl: string, workspaceId: string, role: Role): Promise<Person> {
  const person = new Person(baseUrl);
  const user = await createUser(knex, { email: person.email, password: person.password });
  await addMember(knex, workspaceId, user.id, role);
  const res = await person.signIn();
  if (res.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(res.body)}`);
  return person;
}
