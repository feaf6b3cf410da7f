// The query parameters of API v1: one zod object per operation (keyed by its operationId), which the route parses
// `req.query` with (parseQuery) and the OpenAPI document declares its parameters from (queryParameters), so the two
// cannot disagree. A bad value answers 400 `invalid_<name>` (or the code the operation names for it) with a message a
// person can act on; an absent optional one takes its default.
import { z } from 'zod';
import { ApiError } from './problem';
import { checkQuery } from './validation';
import { approvalStatuses, itemStatuses, runStatuses, triggers } from '../db/runs';
import { reviewStatuses } from '../model/review';
import { timelineKinds } from '../db/timeline';

/**
 * A whole number in a range, sent as text (`?limit=20`): digits only, so text that JavaScript would read as a number
 * (blank, `0x10`, `1e2`, ` 5`) is refused as the document's `integer` refuses it. Documented as that integer.
 */
const wholeNumber = (
  name: string,
  min: number,
  max: number,
  problem = `${name} must be a whole number from ${min} to ${max}`,
) =>
  z
    .string({ error: problem })
    .regex(/^\d{1,16}$/, problem)
    .pipe(z.coerce.number<string>().int(problem).min(min, problem).max(max, problem))
    .meta({ type: 'integer', minimum: min, maximum: max, pattern: undefined });

const oneOf = <T extends readonly [string, ...string[]]>(name: string, values: T) =>
  z.enum(values, { error: `${name} must be one of ${values.join(', ')}` });

const uuid = (name: string, what: string) => z.guid({ error: `${name} must be the id of ${what} (a UUID)` });

/** A date-time as sent (RFC 3339, with its offset; a plain date means its midnight UTC). */
const dateTime = (name: string) => {
  const problem = `${name} must be an ISO 8601 date-time (2026-11-01T09:30:00Z) or date (2026-11-01)`;
  return z
    .union([z.iso.datetime({ offset: true, error: problem }), z.iso.date({ error: problem })], { error: problem })
    .transform((s) => new Date(s));
};

/** `limit` and `cursor` of a paged list: at most `max` a page, `fallback` when not given. */
const page = (fallback: number, max: number) => ({
  limit: wholeNumber('limit', 1, max).default(fallback).describe(`Page size, at most ${max}`),
  cursor: z
    .string({ error: 'cursor must be the next_cursor of the previous page' })
    .transform((s) => s || undefined)
    .optional()
    .describe('next_cursor of the previous page'),
});

/** An operation's query: its parameters, and the problem code of a parameter whose code is not `invalid_<name>`. */
interface Query<S extends z.ZodRawShape> {
  schema: z.ZodObject<S>;
  codes: Partial<Record<string, string>>;
}
const query = <S extends z.ZodRawShape>(shape: S, codes: Partial<Record<keyof S & string, string>> = {}): Query<S> => ({
  schema: z.object(shape),
  codes,
});

const versionNumber = (name: string) =>
  wholeNumber(name, 1, 999_999_999, `${name} must be a version number: a whole number from 1 to 999999999`);

export const queries = {
  discoverSso: query({
    email: z
      .email({ error: 'give your work email address as ?email=' })
      .max(254, 'give your work email address as ?email=')
      .describe('Your work email address; its domain names the workspace'),
  }),
  startSso: query({ next: z.string().optional().describe('Console path to return to') }),
  finishSso: query({
    code: z.string().optional().describe("The provider's authorization code"),
    state: z.string().optional().describe('The state this service sent'),
    iss: z.string().optional().describe('The issuer (RFC 9207)'),
    error: z.string().optional().describe("The provider's refusal, if it refused"),
    error_description: z.string().optional(),
  }),
  finishConnectionAuthorization: query({
    code: z.string().optional().describe("The provider's authorization code"),
    state: z.string().optional().describe('The state this service sent'),
    iss: z.string().optional().describe('The issuer (RFC 9207)'),
    error: z.string().optional().describe("The provider's refusal, if it refused"),
    error_description: z.string().optional(),
  }),
  listAuditEvents: query({
    action: z
      .string()
      .transform((s) => s || undefined)
      .optional()
      .describe('Actions starting with this, e.g. login.'),
    ...page(50, 500),
  }),
  listAgents: query(page(100, 500)),
  listSources: query(page(100, 500)),
  listSkills: query(page(100, 500)),
  listConnections: query(page(100, 500)),
  listApiKeys: query(page(100, 500)),
  listMembers: query(page(100, 500)),
  listState: query(page(100, 500)),
  listConversations: query(page(100, 500)),
  listInboxThreads: query(page(100, 500)),
  updateAgent: query({
    base_version: versionNumber('base_version')
      .optional()
      .describe('The version the edit started from: refused (409 version_conflict) if a newer one was saved since'),
  }),
  restoreVersion: query({
    base_version: versionNumber('base_version')
      .optional()
      .describe(
        'The version shown when restoring was asked: refused (409 version_conflict) if a newer one was saved since',
      ),
  }),
  diffVersions: query(
    { from: versionNumber('from'), to: versionNumber('to') },
    { from: 'invalid_version', to: 'invalid_version' },
  ),
  agentTimeline: query({ kind: oneOf('kind', timelineKinds).optional(), ...page(50, 500) }),
  listRuns: query(
    {
      agent_id: uuid('agent_id', 'an agent').optional(),
      status: oneOf('status', runStatuses).optional(),
      trigger: oneOf('trigger', triggers).optional(),
      from: dateTime('from').optional().describe('Created at or after'),
      to: dateTime('to').optional().describe('Created before'),
      ...page(50, 500),
    },
    { from: 'invalid_date', to: 'invalid_date' },
  ),
  listRunItems: query({
    status: oneOf('status', itemStatuses).optional(),
    from_seq: wholeNumber('from_seq', 0, 2_147_483_647).optional().describe('Items from this sequence number on'),
    ...page(100, 1000),
  }),
  listRunLogs: query(page(200, 1000)),
  listApprovals: query({
    status: oneOf('status', approvalStatuses).optional(),
    run_id: uuid('run_id', 'a run').optional().describe('Only the approvals of this run'),
    ...page(100, 500),
  }),
  listReviews: query({
    status: oneOf('status', reviewStatuses).optional(),
    agent_id: uuid('agent_id', 'an agent').optional().describe('Only the items of this agent'),
    run_id: uuid('run_id', 'a run').optional().describe('Only the items of this run'),
    ...page(100, 500),
  }),
  dailyStats: query({
    days: wholeNumber('days', 1, 366).default(30).describe('How many days back, today included'),
    agent_id: uuid('agent_id', 'an agent').optional().describe('Only the runs of this agent'),
  }),
  listSourceVersionPassages: query({
    ...page(100, 500),
    cursor: page(100, 500)
      .cursor.refine(
        (c) => c === undefined || /^\d{1,9}$/.test(c),
        'cursor must be the next_cursor of the previous page',
      )
      .describe('next_cursor of the previous page'),
  }),
  getCitationPageImage: query({
    highlight: oneOf('highlight', ['true', 'false']).default('false').describe('Draw the passage boxes'),
  }),
  getRunSourceContext: query({ item: wholeNumber('item', 0, 2_147_483_647).optional().describe('One item only') }),
  getRunSkillContext: query({ item: wholeNumber('item', 0, 2_147_483_647).optional().describe('One item only') }),
} satisfies Record<string, Query<z.ZodRawShape>>;

/**
 * The operation's query parameters, checked and typed; 400 with the first bad parameter's problem otherwise (422 for
 * text no parameter may hold: validation.ts).
 */
export function parseQuery<S extends z.ZodRawShape>(q: Query<S>, given: unknown): z.output<z.ZodObject<S>> {
  checkQuery(given);
  // Express reads `?a=1&a=2` as an array: no parameter of this API takes more than one value, so which was meant
  // is not guessed.
  for (const name of Object.keys(q.schema.shape))
    if (Array.isArray((given as Record<string, unknown> | undefined)?.[name]))
      throw new ApiError(400, q.codes[name] ?? `invalid_${name}`, `${name} is given more than once: give it once`);
  const result = q.schema.safeParse(given);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const name = String(issue.path[0]);
  throw new ApiError(400, q.codes[name] ?? `invalid_${name}`, issue.message);
}

/** The operation's query parameters as OpenAPI 3.1 parameter objects (JSON Schema 2020-12, as sent: text coerced). */
export function queryParameters(q: Query<z.ZodRawShape>) {
  // Through JSON: a key a schema's metadata unsets (wholeNumber's pattern) is left out, not kept as undefined.
  const schema = z.toJSONSchema(q.schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
  const doc = JSON.parse(JSON.stringify(schema)) as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  return Object.entries(doc.properties ?? {}).map(([name, { description, ...schema }]) => ({
    name,
    in: 'query',
    required: doc.required?.includes(name) ?? false,
    schema,
    ...(description ? { description } : {}),
  }));
}
