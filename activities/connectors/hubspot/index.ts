// The HubSpot connector (model/connectors/hubspot.ts) with @hubspot/api-client, over the generic CRM objects API
// (/crm/v3/objects/{type}) and the v4 associations. HubSpot takes no idempotency key, so a create looks before it
// writes: a contact by its email (HubSpot keeps emails unique and answers 409 with the existing id), a company or
// deal by its step's key in the property the connection names (step_key_property). A create with neither cannot be
// told apart from a new one, so when HubSpot's answer is lost the step stops and says so instead of retrying.
import { ApplicationFailure } from '@temporalio/common';
import { hubspotConnector, type HubspotObjectType } from '../../../model/connectors/hubspot';
import type { ToolContext } from '../../tools/tool-context';
import type { EventBatch } from '../connector';
import { implement } from '../implementation';
import { failureOf, hubspot, hubspotRaw, isApiError, type HubspotConnection } from './client';

type PropertyValue = string | number | boolean | null;

interface HubspotRecord {
  id: string;
  properties: Record<string, string | null>;
  createdAt?: Date;
  updatedAt?: Date;
  archived?: boolean;
}

const recordOf = (r: HubspotRecord) => ({
  id: r.id,
  properties: r.properties,
  created_at: r.createdAt?.toISOString(),
  updated_at: r.updatedAt?.toISOString(),
});

/** HubSpot takes property values as text. */
const asText = (properties: Record<string, PropertyValue>) =>
  Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, v === null ? '' : String(v)]));

const singular: Record<HubspotObjectType, string> = { contacts: 'contact', companies: 'company', deals: 'deal' };

interface Filter {
  property: string;
  operator: string;
  value?: string | number | boolean;
}

async function search(
  c: HubspotConnection,
  type: HubspotObjectType,
  q: {
    filters: Filter[];
    properties?: string[];
    sort?: { property: string; direction: 'ASCENDING' | 'DESCENDING' };
    limit: number;
    after?: string;
  },
) {
  const page = await hubspot(c, `finding ${type}`, (client) =>
    client.crm.objects.searchApi.doSearch(type, {
      filterGroups: q.filters.length
        ? [
            {
              filters: q.filters.map((f) => ({
                propertyName: f.property,
                operator: f.operator as never,
                ...(f.value === undefined ? {} : { value: String(f.value) }),
              })),
            },
          ]
        : [],
      // The wire format is {propertyName, direction}; the client's type says string but sends what it is given.
      sorts: (q.sort ? [{ propertyName: q.sort.property, direction: q.sort.direction }] : []) as never,
      ...(q.properties ? { properties: q.properties } : {}),
      limit: q.limit,
      ...(q.after ? { after: q.after } : {}),
    }),
  );
  return {
    results: (page.results as HubspotRecord[]).map(recordOf),
    total: page.total,
    next_after: page.paging?.next?.after ?? null,
  };
}

const getRecord = async (c: HubspotConnection, type: HubspotObjectType, id: string, properties?: string[]) =>
  recordOf(
    (await hubspot(c, `reading ${singular[type]} ${id}`, (client) =>
      client.crm.objects.basicApi.getById(type, id, properties),
    )) as HubspotRecord,
  );

/** The record an earlier attempt of this step made, found by its natural or step key. */
async function earlierCreate(c: HubspotConnection, type: HubspotObjectType, key: Filter | undefined) {
  if (!key) return undefined;
  const { results } = await search(c, type, { filters: [key], limit: 1 });
  return results[0];
}

async function create(
  input: { type: HubspotObjectType; properties: Record<string, PropertyValue> },
  c: HubspotConnection,
  ctx: ToolContext,
) {
  const { type } = input;
  const properties = asText(input.properties);
  const email = type === 'contacts' ? properties.email?.trim() : undefined;
  const stepKey = !email && type !== 'contacts' ? c.config.step_key_property : undefined;
  if (stepKey) properties[stepKey] = ctx.idempotencyKey;
  const key: Filter | undefined = email
    ? { property: 'email', operator: 'EQ', value: email }
    : stepKey
      ? { property: stepKey, operator: 'EQ', value: ctx.idempotencyKey }
      : undefined;

  const earlier = await earlierCreate(c, type, key);
  if (earlier) return { ...earlier, existing: true };
  const what = `creating a ${singular[type]}`;
  try {
    const made = await hubspotRaw(c, what, (client) =>
      client.crm.objects.basicApi.create(type, { properties, associations: [] }),
    );
    return { ...recordOf(made as HubspotRecord), existing: false };
  } catch (err) {
    // A contact with this email exists (made meanwhile, or not yet in the search index): it is the one.
    const existingId =
      isApiError(err) && err.code === 409 ? /Existing ID: (\d+)/.exec(err.body?.message ?? '')?.[1] : undefined;
    if (existingId) return { ...(await getRecord(c, type, existingId)), existing: true };
    const failure = failureOf(c, what, err);
    const lost = failure instanceof ApplicationFailure && !failure.nonRetryable;
    if (lost && !key)
      throw ApplicationFailure.nonRetryable(
        `${what}: HubSpot's answer was lost (${failure.message}), so it may have made the ${singular[type]}; the step ` +
          'stops rather than risk a second one: check HubSpot' +
          (type === 'contacts'
            ? ', and give contacts an email'
            : `, and name a step_key_property on connection "${c.name}" so such steps can retry safely`),
        'HubspotCreateUncertain',
      );
    throw failure;
  }
}

/** Most pages (100 records each) one poll reads. */
const pollPages = 10;

/**
 * Records whose `stamp` (a date property) is at or after the cursor (epoch milliseconds), oldest first. At, not
 * after: records stamped in the same millisecond are not lost, and triggers drop the events they have seen.
 */
function stampPoller(type: HubspotObjectType, stamp: string, idOf: (r: ReturnType<typeof recordOf>) => string) {
  return async (c: HubspotConnection, cursor: string | undefined): Promise<EventBatch> => {
    const millis = (r: ReturnType<typeof recordOf>) => Date.parse(r.properties[stamp] ?? '') || 0;
    if (cursor === undefined) {
      const { results } = await search(c, type, {
        filters: [],
        sort: { property: stamp, direction: 'DESCENDING' },
        properties: [stamp],
        limit: 1,
      });
      return { events: [], cursor: String(results[0] ? millis(results[0]) + 1 : 0) };
    }
    const found: ReturnType<typeof recordOf>[] = [];
    let after: string | undefined;
    for (let i = 0; i < pollPages; i++) {
      const page = await search(c, type, {
        filters: [{ property: stamp, operator: 'GTE', value: cursor }],
        sort: { property: stamp, direction: 'ASCENDING' },
        limit: 100,
        after,
      });
      found.push(...page.results);
      after = page.next_after ?? undefined;
      if (!after) break;
    }
    return {
      events: found.map((r) => ({
        id: idOf(r),
        occurred_at: new Date(millis(r)).toISOString(),
        data: { type: singular[type], ...r },
      })),
      cursor: found.length ? String(Math.max(Number(cursor), ...found.map(millis))) : cursor,
    };
  };
}

export const hubspotImplementation = implement(hubspotConnector, {
  async check(c) {
    const found: string[] = [];
    for (const type of ['contacts', 'companies', 'deals'] as const) {
      const page = await hubspot(c, `listing ${type}`, (client) => client.crm.objects.basicApi.getPage(type, 1));
      found.push(`${type}${page.results.length ? '' : ' (none yet)'}`);
    }
    const property = c.config.step_key_property;
    if (property)
      for (const type of ['companies', 'deals'] as const)
        await hubspot(c, `finding the property ${property} of ${type}`, (client) =>
          client.crm.properties.coreApi.getByName(type, property),
        ).catch((err: Error) => {
          throw new Error(
            `${type} have no property "${property}" (step_key_property): make it in HubSpot as single-line text, or leave the setting empty (${err.message})`,
          );
        });
    return { server_version: `HubSpot CRM at ${new URL(c.config.base_url).host}`, found };
  },
  handlers: {
    'hubspot.find': (input, c) => search(c, input.type, input),
    'hubspot.get': (input, c) => getRecord(c, input.type, input.id, input.properties),
    'hubspot.create': (input, c, ctx) => create(input, c, ctx),
    'hubspot.update': async (input, c) =>
      recordOf(
        (await hubspot(c, `changing ${singular[input.type]} ${input.id}`, (client) =>
          client.crm.objects.basicApi.update(input.type, input.id, { properties: asText(input.properties) }),
        )) as HubspotRecord,
      ),
    'hubspot.associate': async (input, c) => {
      await hubspot(
        c,
        `associating ${singular[input.from_type]} ${input.from_id} with ${singular[input.to_type]} ${input.to_id}`,
        (client) =>
          client.crm.associations.v4.basicApi.createDefault(input.from_type, input.from_id, input.to_type, input.to_id),
      );
      return { from: { type: input.from_type, id: input.from_id }, to: { type: input.to_type, id: input.to_id } };
    },
  },
  pollers: {
    'contact.created': stampPoller('contacts', 'createdate', (r) => r.id),
    'deal.updated': stampPoller('deals', 'hs_lastmodifieddate', (r) => `${r.id}:${r.properties.hs_lastmodifieddate}`),
  },
});
