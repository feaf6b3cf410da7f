// A CRM in HubSpot: find, read, create and update contacts, companies and deals, and associate them. It acts with a
// private app's access token given here, or through an OAuth 2.0 account of the workspace (an oauth2 connection
// authorized at HubSpot), never both.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('a HubSpot');
export const hubspotObjectTypes = ['contacts', 'companies', 'deals'] as const;
export type HubspotObjectType = (typeof hubspotObjectTypes)[number];
const objectType = z.enum(hubspotObjectTypes).describe('the kind of CRM record');
const objectId = z
  .string()
  .regex(/^\d{1,20}$/, 'a HubSpot record id (digits)')
  .describe("the record's id in HubSpot");
const propertyName = z.string().regex(/^[a-z0-9_]{1,100}$/i, 'a HubSpot property name such as email or dealstage');
const propertyValue = z.union([z.string().max(65_536), z.number(), z.boolean(), z.null()]);

/** The operators of HubSpot's CRM search. */
export const hubspotOperators = [
  'EQ',
  'NEQ',
  'LT',
  'LTE',
  'GT',
  'GTE',
  'CONTAINS_TOKEN',
  'NOT_CONTAINS_TOKEN',
  'HAS_PROPERTY',
  'NOT_HAS_PROPERTY',
] as const;

export const hubspotConfigSchema = z.object({
  account: z
    .string()
    .min(1)
    .max(60)
    .optional()
    .describe(
      'the OAuth 2.0 connection of this workspace authorized at HubSpot (leave empty to give a private app token instead)',
    ),
  base_url: z
    .url({ protocol: /^https?$/ })
    .max(500)
    .default('https://api.hubapi.com')
    .describe("HubSpot's API address; change it only for a HubSpot-compatible server"),
  step_key_property: propertyName
    .optional()
    .describe(
      'a single-line text property you made on companies and deals (e.g. cadre_step_key): each create stores its ' +
        'step there, so a retried step finds the record instead of making a second one',
    ),
});
export type HubspotConfig = z.infer<typeof hubspotConfigSchema>;

export const hubspotCredentialsSchema = z
  .object({
    access_token: z
      .string()
      .min(10)
      .max(1000)
      .optional()
      .describe("a private app's access token (pat-…) with the CRM scopes, when no account is named"),
  })
  .default({});

const properties = z
  .record(propertyName, propertyValue)
  .refine((p) => Object.keys(p).length > 0 && Object.keys(p).length <= 200, 'give 1 to 200 properties')
  .describe('property values by internal name: {email, firstname} for contacts, {name, domain}, {dealname, amount}');
const returned = z
  .array(propertyName)
  .max(100)
  .optional()
  .describe("the properties to answer; HubSpot's defaults for the type when left out");

export const hubspotConnector = defineConnector({
  kind: 'hubspot',
  label: 'HubSpot',
  category: 'crm',
  description: 'Find, create and update HubSpot contacts, companies and deals, and associate them.',
  config: hubspotConfigSchema,
  credentials: hubspotCredentialsSchema,
  tools: {
    'hubspot.find': {
      name: 'hubspot.find',
      description:
        'Find HubSpot contacts, companies or deals whose properties match all the filters (none: every record), ' +
        'a page at a time: answers the records and the cursor of the next page.',
      input: z.object({
        connection,
        type: objectType,
        filters: z
          .array(
            z.object({
              property: propertyName,
              operator: z.enum(hubspotOperators).default('EQ'),
              value: z.union([z.string().max(1000), z.number(), z.boolean()]).optional(),
            }),
          )
          .max(6)
          .default([]),
        properties: returned,
        sort: z
          .object({ property: propertyName, direction: z.enum(['ASCENDING', 'DESCENDING']).default('ASCENDING') })
          .optional(),
        limit: z.number().int().min(1).max(200).default(20),
        after: z.string().max(100).optional().describe('the cursor a previous page answered as next_after'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'hubspot.get': {
      name: 'hubspot.get',
      description: 'Read one HubSpot contact, company or deal by its id.',
      input: z.object({ connection, type: objectType, id: objectId, properties: returned }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'hubspot.create': {
      name: 'hubspot.create',
      description:
        'Create a HubSpot contact, company or deal; a contact whose email HubSpot already has is answered as it ' +
        'is (existing: true) rather than duplicated.',
      input: z.object({ connection, type: objectType, properties }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'hubspot.update': {
      name: 'hubspot.update',
      description: 'Change properties of a HubSpot contact, company or deal, found by its id.',
      input: z.object({ connection, type: objectType, id: objectId, properties }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'hubspot.associate': {
      name: 'hubspot.associate',
      description: "Associate two HubSpot records with HubSpot's default label (a deal with its company or contact).",
      input: z.object({
        connection,
        from_type: objectType,
        from_id: objectId,
        to_type: objectType,
        to_id: objectId,
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
  },
  events: {
    'contact.created': { description: 'A contact was created in HubSpot.' },
    'deal.updated': { description: 'A deal was created or changed in HubSpot (each change is one event).' },
  },
  where: (config) => `${new URL(config.base_url).host}${config.account ? ` as account "${config.account}"` : ''}`,
  account: (config) => config.account,
  tokenDestination: (config) => config.base_url,
});
