// A stateful HubSpot CRM API for tests, over real HTTP in HubSpot's wire format: /crm/v3/objects/{contacts|companies|
// deals} (list with limit/after paging, read, create, update, search with filterGroups and sorts), the properties of
// each type (/crm/v3/properties), default associations (/crm/v4), the Bearer token checked, and HubSpot's errors:
// `{status: 'error', message, correlationId, category}` with 400 VALIDATION_ERROR for unknown properties, 401
// INVALID_AUTHENTICATION, 404 OBJECT_NOT_FOUND, 409 CONFLICT for a contact's email taken, 429 with Retry-After.
// Tests drive it only through @hubspot/api-client and read its state directly.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export type ObjectType = 'contacts' | 'companies' | 'deals';
const types: ObjectType[] = ['contacts', 'companies', 'deals'];

export interface CrmRecord {
  id: string;
  properties: Record<string, string | null>;
  createdAt: string;
  updatedAt: string;
  archived: false;
  /** Search finds it (HubSpot's search index lags its writes). */
  searchable: boolean;
}

export interface HubspotCall {
  method: string;
  path: string;
}

export interface FakeHubspot {
  url: string;
  /** Calls that passed authentication, in order. */
  calls: HubspotCall[];
  /** Paths answered 429, in order. */
  rateLimited: string[];
  addToken(token: string): void;
  records(type: ObjectType): CrmRecord[];
  /** A record made in HubSpot by someone else; `searchable: false` while the search index has not caught up. */
  seed(type: ObjectType, properties: Record<string, string>, opts?: { searchable?: boolean }): CrmRecord;
  /** Someone changes a record in HubSpot. */
  touch(type: ObjectType, id: string, properties: Record<string, string>): CrmRecord;
  defineProperty(type: ObjectType, name: string): void;
  associations(type: ObjectType, id: string): string[];
  /** The next `times` requests whose "METHOD path" matches are answered 429 with Retry-After `seconds`. */
  rateLimit(match: RegExp, seconds: number, times?: number): void;
  /** The next request whose "METHOD path" matches is carried out, but its answer is lost. */
  loseAnswer(match: RegExp): void;
  close(): Promise<void>;
}

const defaults: Record<ObjectType, string[]> = {
  contacts: ['createdate', 'email', 'firstname', 'hs_object_id', 'lastmodifieddate', 'lastname'],
  companies: ['createdate', 'domain', 'hs_lastmodifieddate', 'hs_object_id', 'name'],
  deals: [
    'amount',
    'closedate',
    'createdate',
    'dealname',
    'dealstage',
    'hs_lastmodifieddate',
    'hs_object_id',
    'pipeline',
  ],
};
const extra: Record<ObjectType, string[]> = {
  contacts: ['phone', 'company', 'jobtitle', 'lifecyclestage', 'hs_lastmodifieddate'],
  companies: ['industry', 'city', 'phone', 'lifecyclestage'],
  deals: ['hubspot_owner_id', 'description'],
};
const modified: Record<ObjectType, string[]> = {
  contacts: ['lastmodifieddate', 'hs_lastmodifieddate'],
  companies: ['hs_lastmodifieddate'],
  deals: ['hs_lastmodifieddate'],
};
const dates = new Set(['createdate', 'lastmodifieddate', 'hs_lastmodifieddate', 'closedate']);
const readOnly = new Set(['createdate', 'lastmodifieddate', 'hs_lastmodifieddate', 'hs_object_id']);
/** HubSpot's default association type ids, by from → to. */
const associationTypes: Record<string, number> = {
  'contacts→companies': 279,
  'companies→contacts': 280,
  'deals→contacts': 3,
  'contacts→deals': 4,
  'deals→companies': 341,
  'companies→deals': 342,
};

export async function startFakeHubspot(
  opts: { authorize?: (token: string) => Promise<boolean> } = {},
): Promise<FakeHubspot> {
  const tokens = new Set<string>();
  const store: Record<ObjectType, CrmRecord[]> = { contacts: [], companies: [], deals: [] };
  const properties: Record<ObjectType, Set<string>> = {
    contacts: new Set([...defaults.contacts, ...extra.contacts]),
    companies: new Set([...defaults.companies, ...extra.companies]),
    deals: new Set([...defaults.deals, ...extra.deals]),
  };
  const links = new Set<string>();
  const calls: HubspotCall[] = [];
  const rateLimited: string[] = [];
  const limits: { match: RegExp; seconds: number; times: number }[] = [];
  const losing: RegExp[] = [];
  let nextId = 100;
  let lastMillis = 0;
  /** Increasing, so records' stamps order them as they were made. */
  const now = () => {
    lastMillis = Math.max(Date.now(), lastMillis + 1);
    return new Date(lastMillis).toISOString();
  };

  const error = (status: number, category: string, message: string, more: Record<string, unknown> = {}) => ({
    status,
    body: { status: 'error', message, correlationId: randomUUID(), category, ...more },
  });
  const notFound = () => error(404, 'OBJECT_NOT_FOUND', 'resource not found');

  const invalid = (type: ObjectType, given: Record<string, unknown>) => {
    const wrong = Object.keys(given).filter((k) => !properties[type].has(k) || readOnly.has(k));
    if (wrong.length === 0) return undefined;
    const details = wrong.map((name) => ({
      isValid: false,
      message: readOnly.has(name) ? `${name} is a read only property` : `Property "${name}" does not exist`,
      error: readOnly.has(name) ? 'READ_ONLY_VALUE' : 'PROPERTY_DOESNT_EXIST',
      name,
    }));
    return error(400, 'VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify(details)}`);
  };

  const shown = (type: ObjectType, r: CrmRecord, asked?: string[]) => {
    const names = asked?.length
      ? [...asked, 'createdate', 'hs_object_id', ...modified[type].slice(0, 1)]
      : defaults[type];
    return {
      id: r.id,
      properties: Object.fromEntries(
        names.filter((n) => properties[type].has(n)).map((n) => [n, r.properties[n] ?? null]),
      ),
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      archived: false,
    };
  };

  const make = (type: ObjectType, given: Record<string, string>, searchable = true): CrmRecord => {
    const at = now();
    const id = String(++nextId);
    const r: CrmRecord = {
      id,
      properties: {
        ...given,
        createdate: at,
        hs_object_id: id,
        ...Object.fromEntries(modified[type].map((p) => [p, at])),
      },
      createdAt: at,
      updatedAt: at,
      archived: false,
      searchable,
    };
    store[type].push(r);
    return r;
  };

  const change = (type: ObjectType, r: CrmRecord, given: Record<string, string>) => {
    const at = now();
    Object.assign(r.properties, given, Object.fromEntries(modified[type].map((p) => [p, at])));
    r.updatedAt = at;
    return r;
  };

  const comparable = (property: string, value: unknown) => {
    if (value === null || value === undefined || value === '') return undefined;
    const text = String(value);
    if (dates.has(property)) return /^\d+$/.test(text) ? Number(text) : Date.parse(text);
    return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text.toLowerCase();
  };
  const matches = (r: CrmRecord, f: { propertyName: string; operator: string; value?: string; values?: string[] }) => {
    const have = comparable(f.propertyName, r.properties[f.propertyName]);
    const want = comparable(f.propertyName, f.value);
    switch (f.operator) {
      case 'HAS_PROPERTY':
        return have !== undefined;
      case 'NOT_HAS_PROPERTY':
        return have === undefined;
      case 'EQ':
        return have !== undefined && have === want;
      case 'NEQ':
        return have !== want;
      case 'IN':
        return (f.values ?? []).some((v) => comparable(f.propertyName, v) === have);
      case 'CONTAINS_TOKEN':
      case 'NOT_CONTAINS_TOKEN': {
        const pattern = new RegExp(
          `^${String(f.value ?? '')
            .toLowerCase()
            .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
            .replaceAll('*', '.*')}$`,
        );
        const found = String(r.properties[f.propertyName] ?? '')
          .toLowerCase()
          .split(/[^\p{L}\p{N}@.*-]+/u)
          .some((token) => pattern.test(token));
        return f.operator === 'CONTAINS_TOKEN' ? found : !found;
      }
      default: {
        if (have === undefined || want === undefined) return false;
        const [a, b] = [have, want] as [number, number];
        return f.operator === 'LT' ? a < b : f.operator === 'LTE' ? a <= b : f.operator === 'GT' ? a > b : a >= b;
      }
    }
  };

  type Body = Record<string, unknown>;
  type Answer = { status: number; body?: unknown };

  function route(method: string, url: URL, body: Body): Answer {
    const path = url.pathname.replace(/\/+$/, '');
    const objects = /^\/crm\/v3\/objects\/(\w+)(?:\/(search|\d+))?$/.exec(path);
    if (objects) {
      const type = objects[1] as ObjectType;
      if (!types.includes(type))
        return error(400, 'VALIDATION_ERROR', `Unable to infer object type from: ${objects[1]}`);
      const [, , sub] = objects;
      const asked = url.searchParams
        .getAll('properties')
        .flatMap((p) => p.split(','))
        .filter(Boolean);
      if (!sub && method === 'GET') {
        const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 10));
        const after = Number(url.searchParams.get('after') ?? 0);
        const all = [...store[type]].sort((a, b) => Number(a.id) - Number(b.id)).filter((r) => Number(r.id) > after);
        const page = all.slice(0, limit);
        const more = all.length > limit;
        return {
          status: 200,
          body: {
            results: page.map((r) => shown(type, r, asked)),
            ...(more
              ? { paging: { next: { after: page.at(-1)!.id, link: `${url.origin}${path}?after=${page.at(-1)!.id}` } } }
              : {}),
          },
        };
      }
      if (!sub && method === 'POST') {
        const given = (body.properties ?? {}) as Record<string, string>;
        const bad = invalid(type, given);
        if (bad) return bad;
        if (type === 'contacts' && given.email) {
          const taken = store.contacts.find((r) => r.properties.email?.toLowerCase() === given.email.toLowerCase());
          if (taken) return error(409, 'CONFLICT', `Contact already exists. Existing ID: ${taken.id}`);
        }
        return { status: 201, body: shown(type, make(type, given), Object.keys(given)) };
      }
      if (sub === 'search' && method === 'POST') {
        const groups = (body.filterGroups ?? []) as { filters: Parameters<typeof matches>[1][] }[];
        if (groups.length > 5 || groups.some((g) => g.filters.length > 6))
          return error(400, 'VALIDATION_ERROR', 'There was a problem with the request: too many filters');
        let found = store[type].filter(
          (r) => r.searchable && (groups.length === 0 || groups.some((g) => g.filters.every((f) => matches(r, f)))),
        );
        const [sort] = (body.sorts ?? []) as ({ propertyName: string; direction?: string } | string)[];
        if (sort) {
          const by = typeof sort === 'string' ? sort.replace(/^-/, '') : sort.propertyName;
          const down = typeof sort === 'string' ? sort.startsWith('-') : sort.direction === 'DESCENDING';
          found = [...found].sort((a, b) => {
            const [x, y] = [comparable(by, a.properties[by]) ?? '', comparable(by, b.properties[by]) ?? ''];
            return (x < y ? -1 : x > y ? 1 : Number(a.id) - Number(b.id)) * (down ? -1 : 1);
          });
        } else found = [...found].sort((a, b) => Number(a.id) - Number(b.id));
        const limit = Number(body.limit ?? 10);
        if (limit > 200) return error(400, 'VALIDATION_ERROR', 'limit must be at most 200');
        const after = Number(body.after ?? 0);
        const page = found.slice(after, after + limit);
        return {
          status: 200,
          body: {
            total: found.length,
            results: page.map((r) => shown(type, r, body.properties as string[] | undefined)),
            ...(after + limit < found.length ? { paging: { next: { after: String(after + limit) } } } : {}),
          },
        };
      }
      const record = store[type].find((r) => r.id === sub);
      if (!record) return notFound();
      if (method === 'GET') return { status: 200, body: shown(type, record, asked) };
      if (method === 'PATCH') {
        const given = (body.properties ?? {}) as Record<string, string>;
        const bad = invalid(type, given);
        if (bad) return bad;
        return { status: 200, body: shown(type, change(type, record, given), Object.keys(given)) };
      }
    }
    const property = /^\/crm\/v3\/properties\/(\w+)\/(\w+)$/.exec(path);
    if (property && method === 'GET') {
      const type = property[1] as ObjectType;
      if (!types.includes(type) || !properties[type].has(property[2]))
        return error(
          404,
          'OBJECT_NOT_FOUND',
          `Unable to find property with name ${property[2]} in object type ${property[1]}`,
        );
      const at = new Date(0).toISOString();
      return {
        status: 200,
        body: {
          name: property[2],
          label: property[2],
          type: dates.has(property[2]) ? 'datetime' : 'string',
          fieldType: dates.has(property[2]) ? 'date' : 'text',
          description: '',
          groupName: 'objectinformation',
          options: [],
          createdAt: at,
          updatedAt: at,
          displayOrder: -1,
          calculated: false,
          externalOptions: false,
          hasUniqueValue: false,
          hidden: false,
          formField: true,
          modificationMetadata: {
            archivable: true,
            readOnlyDefinition: false,
            readOnlyValue: readOnly.has(property[2]),
          },
        },
      };
    }
    const associate = /^\/crm\/v4\/objects\/(\w+)\/(\d+)\/associations\/default\/(\w+)\/(\d+)$/.exec(path);
    if (associate && method === 'PUT') {
      const [, from, fromId, to, toId] = associate as unknown as [string, ObjectType, string, ObjectType, string];
      if (!types.includes(from) || !types.includes(to) || !associationTypes[`${from}→${to}`])
        return error(400, 'VALIDATION_ERROR', `no default association from ${from} to ${to}`);
      if (!store[from].some((r) => r.id === fromId) || !store[to].some((r) => r.id === toId)) return notFound();
      links.add(`${from}:${fromId}→${to}:${toId}`);
      links.add(`${to}:${toId}→${from}:${fromId}`);
      const at = now();
      return {
        status: 200,
        body: {
          status: 'COMPLETE',
          results: [
            {
              from: { id: fromId },
              to: { id: toId },
              associationSpec: {
                associationCategory: 'HUBSPOT_DEFINED',
                associationTypeId: associationTypes[`${from}→${to}`],
              },
            },
          ],
          startedAt: at,
          completedAt: at,
        },
      };
    }
    return error(404, 'OBJECT_NOT_FOUND', `no route ${method} ${path}`);
  }

  async function authorized(req: http.IncomingMessage): Promise<Answer | undefined> {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!token)
      return error(
        401,
        'INVALID_AUTHENTICATION',
        'Authentication credentials not found. This API supports OAuth 2.0 authentication.',
      );
    if (tokens.has(token) || (opts.authorize && (await opts.authorize(token)))) return undefined;
    return error(401, 'INVALID_AUTHENTICATION', 'The access token used to make this call is not valid.');
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        const method = req.method ?? 'GET';
        const text = Buffer.concat(chunks).toString();
        const send = (a: Answer, headers: Record<string, string> = {}) => {
          res.writeHead(a.status, { 'content-type': 'application/json;charset=utf-8', ...headers });
          res.end(a.body === undefined ? '' : JSON.stringify(a.body));
        };
        const refused = await authorized(req);
        if (refused) return send(refused);
        const line = `${method} ${url.pathname}`;
        const limit = limits.find((l) => l.times > 0 && l.match.test(line));
        if (limit) {
          limit.times--;
          rateLimited.push(line);
          return send(
            error(429, 'RATE_LIMITS', 'You have reached your ten_secondly_rolling limit.', {
              errorType: 'RATE_LIMIT',
              policyName: 'TEN_SECONDLY_ROLLING',
            }),
            { 'retry-after': String(limit.seconds) },
          );
        }
        let body: Body = {};
        try {
          body = text ? (JSON.parse(text) as Body) : {};
        } catch {
          return send(error(400, 'VALIDATION_ERROR', 'Invalid input JSON on line 1'));
        }
        calls.push({ method, path: url.pathname });
        const answer = route(method, url, body);
        const lose = losing.findIndex((m) => m.test(line));
        if (lose >= 0) {
          losing.splice(lose, 1);
          req.socket.destroy(); // carried out, but the caller never hears
          return;
        }
        send(answer);
      })().catch((err: Error) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'error', message: err.message, category: 'INTERNAL_ERROR' }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    rateLimited,
    addToken: (token) => void tokens.add(token),
    records: (type) => store[type],
    seed: (type, given, o = {}) => make(type, given, o.searchable ?? true),
    touch(type, id, given) {
      const r = store[type].find((x) => x.id === id);
      if (!r) throw new Error(`the fake HubSpot has no ${type} ${id}`);
      return change(type, r, given);
    },
    defineProperty: (type, name) => void properties[type].add(name),
    associations: (type, id) => [...links].filter((l) => l.startsWith(`${type}:${id}→`)).map((l) => l.split('→')[1]),
    rateLimit: (match, seconds, times = 1) => void limits.push({ match, seconds, times }),
    loseAnswer: (match) => void losing.push(match),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
