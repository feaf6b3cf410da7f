// The component schemas of the OpenAPI document (api/openapi.ts) and the helpers each route file writes the
// metadata of its routes with (obj, ref, list, nullable, ts, jsonSchema, the Route type). Request bodies and query
// parameters are the very zod schemas the routes validate with, turned into JSON Schema 2020-12 by zod itself; the
// response shapes are declared here and beside each route.
import { z } from 'zod';
import { bodies } from './request-bodies';
import { reviewStatuses } from '../model/review';
import { approvalStatuses, runStatuses, triggers } from '../db/runs';
import { scopes } from '../db/api-keys';
import { agentSpecSchema } from '../model/agent';
import { chainEndStatuses, formFieldSchema, triggerKinds } from '../model/trigger';
import { timelineKinds } from '../db/timeline';
import {
  connectionKinds,
  connectionStatuses,
  legacyMcpStdioConfigSchema,
  mcpConfigSchema,
  oauth2ConfigSchema,
  openApiConfigSchema,
  sqlConfigSchema,
} from '../model/connection';
import { permissions, roles, type Permission } from '../db/roles';
import { connectorKinds, connectorOf } from '../model/connectors';
import { connectorCategories } from '../model/connectors/definition';
import { instructionPartsSchema, proposedConnectionSchema } from '../model/wizard';
import { authenticationResults } from '../model/inbox';

/** A zod schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect), without the per-schema `$schema` marker. */
export const jsonSchema = (schema: z.ZodType, io: 'input' | 'output' = 'input') => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  });
  return rest as Record<string, unknown>;
};

/**
 * A REST API connection's settings as answered: without its document (it has a route of its own), so the rule that a
 * request gives `document` or `document_url` does not hold of an answer.
 */
function answeredOpenApiConfig() {
  const { anyOf: _either, properties, ...rest } = jsonSchema(openApiConfigSchema, 'output');
  const { document: _document, ...kept } = properties as Record<string, unknown>;
  return { ...rest, properties: kept };
}

// ---- Shapes of responses -------------------------------------------------------------------------------------
export const ts = { type: 'string', format: 'date-time' };
export const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
export const obj = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
});
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const list = (item: object) =>
  obj({ data: { type: 'array', items: item }, next_cursor: nullable({ type: 'string' }) });
const counts = obj(
  Object.fromEntries(
    ['total', 'pending', 'done', 'failed', 'needs_review', 'skipped'].map((k) => [k, { type: 'integer' }]),
  ),
);

/** A form trigger's fields as stored (defaults filled in). */
const formFields = { type: 'array', items: jsonSchema(formFieldSchema, 'output') };

const connectionEvents = {
  type: 'array',
  items: obj({
    name: { type: 'string' },
    description: { type: 'string' },
    options_schema: {
      type: 'object',
      description: 'JSON Schema of what an event trigger chooses (a folder, a table).',
    },
  }),
  description: 'What can happen in the system that an event trigger may start a run on.',
};
export const schemas: Record<string, unknown> = {
  InboxMessage: obj({
    id: { type: 'string', format: 'uuid' },
    direction: { enum: ['inbound', 'outbound'] },
    message_id: { type: 'string' },
    in_reply_to: nullable({ type: 'string' }),
    references: { type: 'array', items: { type: 'string' } },
    from: { type: 'string' },
    to: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    text: { type: 'string', description: 'The plain text (an HTML-only message converted to text).' },
    attachments: {
      type: 'array',
      items: { type: 'string' },
      description: "The attachments' names; each is a file of the run the message started.",
    },
    authentication_results: nullable({
      type: 'string',
      description:
        'The Authentication-Results header (SPF, DKIM, DMARC verdicts) the message arrived with, as the sender or a relay wrote it.',
    }),
    received_spf: nullable({ type: 'string' }),
    verification: nullable({
      ...obj({
        spf: { enum: [...authenticationResults] },
        dkim: { enum: [...authenticationResults] },
        dmarc: { enum: [...authenticationResults] },
        authentication_results: nullable({
          type: 'string',
          description: 'The Authentication-Results header Cadre wrote; null when verification gave up (temperror).',
        }),
      }),
      description:
        "Cadre's own SPF, DKIM and DMARC verdict (mailauth), made by its SMTP listener when the message arrived: a failing one is recorded, never a reason to refuse the message. Null for a message Cadre did not receive itself (its replies).",
    }),
    run: nullable(obj({ id: { type: 'string', format: 'uuid' }, status: { enum: [...runStatuses] } })),
    note: nullable({ type: 'string', description: 'Why an inbound message started no run (the agent was paused…).' }),
    created_at: ts,
  }),
  Problem: {
    ...obj(
      {
        type: { type: 'string' },
        title: { type: 'string' },
        status: { type: 'integer' },
        code: { type: 'string' },
        detail: { type: 'string' },
        errors: {
          type: 'array',
          description: 'A 422 names each problem: `path` in a JSON body, `field` of a form submission.',
          items: obj({ path: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } }, ['message']),
        },
      },
      ['type', 'title', 'status', 'code', 'detail'],
    ),
    description: 'RFC 9457 problem details with a stable machine-readable `code`; some add fields (errors, state…).',
  },
  Run: obj({
    id: { type: 'string', format: 'uuid' },
    agent_id: { type: 'string', format: 'uuid' },
    agent_name: { type: 'string' },
    agent_version: { type: 'integer' },
    status: { enum: [...runStatuses] },
    trigger: { enum: [...triggers] },
    trigger_id: nullable({ type: 'string', format: 'uuid', description: 'The trigger that started the run.' }),
    fired_at: nullable({ ...ts, description: "A scheduled run's scheduled time: when its schedule fired for." }),
    trace_id: nullable({
      type: 'string',
      description:
        'The OpenTelemetry trace the run started in (its start request, delivery, fire, poll or mail); null with tracing off.',
    }),
    input: { type: 'string' },
    created_at: ts,
    started_at: nullable(ts),
    ended_at: nullable(ts),
    duration_ms: nullable({ type: 'number' }),
    counts,
    error: nullable({ type: 'string' }),
    called_by: nullable(
      obj({
        run_id: { type: 'string', format: 'uuid' },
        item_seq: nullable({ type: 'integer' }),
        node_id: nullable({ type: 'string' }),
      }),
    ),
    retry_of: nullable({
      type: 'string',
      format: 'uuid',
      description: 'The run whose failed items this run retries (`POST /v1/runs/{id}/retry`).',
    }),
    test_mode: {
      type: 'boolean',
      description:
        'A test run on past items: tools that act in other systems only planned their effect, approvals were recorded as "would ask".',
    },
    usage: obj({ input_tokens: { type: 'number' }, output_tokens: { type: 'number' }, cost_usd: { type: 'number' } }),
    links: obj({
      self: { type: 'string' },
      console: { type: 'string' },
      temporal: { type: 'string' },
      trace: nullable({
        type: 'string',
        description: "The run's trace in the tracing backend, when CADRE_TRACE_URL is set.",
      }),
    }),
  }),
  HeldBackItem: obj({
    item_seq: { type: 'integer' },
    reason: { const: 'effect_in_doubt' },
    message: { type: 'string' },
    calls: {
      type: 'array',
      description: 'The calls that began and got neither an answer nor a refusal: they may have acted.',
      items: obj({ node_id: { type: 'string' }, tool: { type: 'string' }, error: nullable({ type: 'string' }) }),
    },
  }),
  TestRunComparison: obj({
    run: ref('Run'),
    summary: obj({
      items: { type: 'integer' },
      compared: { type: 'integer', description: 'Items the test run has settled; the rest are still under way.' },
      same_output: { type: 'integer' },
      output_changed: { type: 'integer' },
      route_changed: { type: 'integer' },
      status_changed: { type: 'integer' },
      now_fail: { type: 'integer' },
      now_pass: { type: 'integer' },
      text: { type: 'string', description: '"37 of 40 items give the same output; 2 route differently; 1 now fails"' },
    }),
    items: {
      type: 'array',
      items: obj({
        seq: { type: 'integer' },
        source: obj({ run_id: { type: 'string', format: 'uuid' }, item_seq: { type: 'integer' } }),
        original: nullable(ref('ItemOutcome')),
        test: ref('ItemOutcome'),
        difference: nullable(
          obj({
            output: { enum: ['same', 'changed'] },
            route: { enum: ['same', 'changed'] },
            status: { enum: ['same', 'changed'] },
            now_fails: { type: 'boolean' },
            now_passes: { type: 'boolean' },
          }),
        ),
        planned_effects: {
          type: 'array',
          items: obj({
            node_id: { type: 'string' },
            kind: { enum: ['tool', 'approval', 'review'] },
            tool: nullable({ type: 'string' }),
            arguments: {},
            message: nullable({ type: 'string' }),
          }),
        },
      }),
    },
  }),
  ItemOutcome: obj({
    status: { type: 'string' },
    output: {},
    route: nullable({
      type: 'string',
      description: 'The output node that collected the item, or the node where it stopped.',
    }),
    error: nullable({ type: 'string' }),
  }),
  Approval: obj({
    id: { type: 'string' },
    run_id: { type: 'string' },
    item_seq: { type: 'integer' },
    node_id: { type: 'string' },
    tool: { type: 'string' },
    message: nullable({ type: 'string' }),
    arguments: {},
    status: { enum: [...approvalStatuses] },
    decided_arguments: { description: 'The arguments as approved with edits.' },
    decided_by: nullable({ type: 'string' }),
    reason: nullable({ type: 'string', description: "The reviewer's comment." }),
    requested_at: ts,
    decided_at: nullable(ts),
    timeout_at: nullable(ts),
  }),
  Review: obj({
    id: { type: 'string', format: 'uuid' },
    run_id: { type: 'string', format: 'uuid' },
    agent_id: { type: 'string', format: 'uuid' },
    agent_name: { type: 'string' },
    agent_version: { type: 'integer' },
    item_seq: { type: 'integer' },
    node_id: { type: 'string', description: 'The flag_for_review node that stopped the item.' },
    reason: { type: 'string' },
    status: { enum: [...reviewStatuses] },
    data: { description: "The item's data." },
    output: { description: "The item's output so far (null when it has none)." },
    decision: nullable(jsonSchema(bodies.decideReview, 'output')),
    decided_by: nullable({ type: 'string' }),
    decided_at: nullable(ts),
    created_at: ts,
  }),
  Agent: obj(
    {
      id: { type: 'string', format: 'uuid' },
      workspace_id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      description: { type: 'string' },
      state: { enum: ['draft', 'ready', 'live', 'paused'] },
      current_version: { type: 'integer' },
      tested_version: nullable({ type: 'integer' }),
      created_at: ts,
      updated_at: ts,
      spec: jsonSchema(agentSpecSchema, 'output'),
      last_run: nullable(ref('Run')),
      runs_this_month: { type: 'integer' },
      warnings: {
        type: 'array',
        items: { type: 'string' },
        description:
          'When saved (created, imported, updated, or created by the wizard): another agent of the workspace with the same name (letter case aside), sources or skills the agent lists that do not exist yet, or more than 20 sources. Warnings never refuse the save.',
      },
    },
    ['id', 'workspace_id', 'name', 'description', 'state', 'current_version', 'created_at', 'updated_at'],
  ),
  Trigger: obj(
    {
      id: { type: 'string', format: 'uuid' },
      agent_id: { type: 'string', format: 'uuid' },
      kind: { enum: [...triggerKinds] },
      name: { type: 'string' },
      config: { type: 'object' },
      active: { type: 'boolean' },
      created_at: ts,
      updated_at: ts,
      secret: { type: 'string', description: 'A webhook signing secret: only when created or rotated.' },
      schedule: obj({
        schedule_id: { type: 'string' },
        paused: { type: 'boolean' },
        description: { type: 'string' },
        policies: { type: 'string' },
        timezone: { type: 'string' },
        next_fire_times: {
          type: 'array',
          items: ts,
          description: "The next five fire times, Temporal's own (from describing the schedule); empty if it lost it.",
        },
      }),
      webhook: obj({
        url: { type: 'string' },
        signing: { type: 'string' },
        replay_window_seconds: { type: 'integer' },
      }),
      form: obj({ url: { type: 'string' }, definition_url: { type: 'string' }, fields: formFields }),
      chain: obj({
        source_agent_id: { type: 'string' },
        on_statuses: { type: 'array', items: { enum: [...chainEndStatuses] } },
      }),
      event: obj({
        poller_schedule_id: { type: 'string', description: "The Temporal Schedule that runs the trigger's poller." },
        paused: { type: 'boolean' },
        description: { type: 'string' },
      }),
    },
    ['id', 'agent_id', 'kind', 'name', 'config', 'active', 'created_at', 'updated_at'],
  ),
  TimelineEvent: obj({
    id: { type: 'integer' },
    at: ts,
    kind: { enum: [...timelineKinds] },
    message: { type: 'string' },
    run_id: nullable({ type: 'string' }),
    trigger_id: nullable({ type: 'string' }),
    details: { type: 'object' },
  }),
  User: obj({
    id: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
    name: { type: 'string' },
    created_at: ts,
    two_factor: { type: 'boolean' },
  }),
  WorkspaceMembership: obj({
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    plan: { enum: ['free', 'professional', 'enterprise'] },
    api_enabled: { type: 'boolean' },
    role: { enum: [...roles] },
    /** What the role allows here, so the console shows only the controls a person can use. */
    permissions: { type: 'array', items: { enum: [...permissions] } },
  }),
  Me: obj({
    user: ref('User'),
    workspace: nullable(ref('WorkspaceMembership')),
    workspaces: { type: 'array', items: ref('WorkspaceMembership') },
  }),
  SignedIn: {
    ...obj({
      user: ref('User'),
      csrf_token: nullable({ type: 'string' }),
      workspace_id: nullable({ type: 'string', format: 'uuid' }),
    }),
    description:
      'Sets the HttpOnly `cadre_session` cookie and the `cadre_csrf` cookie; send the latter in `X-CSRF-Token` with every change.',
  },
  Member: obj({
    user_id: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
    name: { type: 'string' },
    role: { enum: [...roles] },
    two_factor: { type: 'boolean' },
    joined_at: ts,
  }),
  Invitation: obj(
    {
      id: { type: 'string', format: 'uuid' },
      role: { enum: [...roles] },
      email: nullable({ type: 'string' }),
      created_at: ts,
      expires_at: ts,
      accepted_at: nullable(ts),
      revoked_at: nullable(ts),
      url: { type: 'string', description: 'The link to accept it: only when created.' },
      emailed: { type: 'boolean' },
    },
    ['id', 'role', 'email', 'created_at', 'expires_at', 'accepted_at', 'revoked_at'],
  ),
  AuditEvent: obj({
    id: { type: 'integer' },
    at: ts,
    actor: { type: 'string' },
    action: { type: 'string' },
    target: nullable({ type: 'string' }),
    details: { type: 'object' },
    ip: nullable({ type: 'string' }),
  }),
  SsoSettings: obj({
    issuer: { type: 'string' },
    client_id: { type: 'string' },
    email_domain: nullable({ type: 'string' }),
    default_role: { enum: [...roles] },
  }),
  Connection: obj(
    {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string', description: 'How agents refer to it (their "connections" and tool arguments).' },
      kind: { enum: [...connectionKinds] },
      config: {
        oneOf: [
          sqlConfigSchema,
          mcpConfigSchema,
          legacyMcpStdioConfigSchema.describe(
            'A stdio MCP connection made before servers were declared by the operator: it names a command, and never runs (using or testing it asks to pick a declared server).',
          ),
          oauth2ConfigSchema,
          ...connectorKinds.map((kind) => connectorOf(kind).config),
        ]
          .map((s) => jsonSchema(s, 'output'))
          .concat(answeredOpenApiConfig()),
      },
      document: {
        ...obj({
          title: nullable({ type: 'string' }),
          version: nullable({ type: 'string' }),
          operation_count: { type: 'integer', description: 'The operations the document describes.' },
          server_url: nullable({ type: 'string', description: 'Its first server; null when it names none.' }),
        }),
        description:
          "A REST API (openapi) connection's document, summed up: GET /connections/{id}/document answers it whole (it is left out of config). Only openapi connections have it.",
      },
      where: { type: 'string', description: 'Where it points: a host, a URL, a mailbox, a bucket.' },
      status: { enum: [...connectionStatuses] },
      status_detail: nullable({ type: 'string' }),
      can: { type: 'array', items: { type: 'string' }, description: 'What its tools may do.' },
      events: connectionEvents,
      created_by: { type: 'string' },
      created_at: ts,
      updated_at: ts,
      last_used_at: nullable(ts),
    },
    [
      'id',
      'name',
      'kind',
      'config',
      'where',
      'status',
      'status_detail',
      'can',
      'events',
      'created_by',
      'created_at',
      'updated_at',
      'last_used_at',
    ],
  ),
  Connector: obj({
    kind: { enum: [...connectorKinds] },
    label: { type: 'string' },
    category: { enum: [...connectorCategories] },
    description: { type: 'string' },
    config_schema: { type: 'object', description: 'JSON Schema of its settings (what is not secret).' },
    credentials_schema: { type: 'object', description: 'JSON Schema of its credentials (sealed, never answered).' },
    tools: {
      type: 'array',
      items: obj({
        name: { type: 'string' },
        description: { type: 'string' },
        side_effect: { enum: ['read', 'state', 'files', 'external'] },
        approval_default: { enum: ['always', 'never'] },
        input_schema: { type: 'object' },
      }),
    },
    events: connectionEvents,
  }),
  McpServer: obj({
    name: { type: 'string', description: 'What a stdio MCP connection names: {"transport": "stdio", "server": name}.' },
    description: nullable({ type: 'string' }),
  }),
  ConnectionTool: obj({
    name: { type: 'string', description: 'The agent tool: mcp.<connection>.<tool>, or a sql.* tool.' },
    tool: { type: 'string', description: "The server's own name for it (for SQL connections the same as name)." },
    description: { type: 'string' },
    input_schema: { type: 'object', description: "JSON Schema of the tool's arguments." },
  }),
  ApiKey: obj(
    {
      id: { type: 'string' },
      name: { type: 'string' },
      prefix: { type: 'string' },
      scopes: { type: 'array', items: { enum: [...scopes] } },
      created_at: ts,
      last_used_at: nullable(ts),
      revoked_at: nullable(ts),
      expires_at: nullable({ ...ts, description: 'When it stops working on its own; null: until revoked.' }),
      key: { type: 'string', description: 'The key itself: only when created or rotated.' },
    },
    ['id', 'name', 'scopes', 'created_at'],
  ),
  SourceVersion: obj({
    version: { type: 'integer' },
    status: { enum: ['indexing', 'ready', 'failed', 'archived'] },
    error: nullable({ type: 'string' }),
    progress: obj({ pages_done: { type: 'integer' }, pages_total: { type: 'integer' } }),
    passages: { type: 'integer' },
    created_at: ts,
    created_by: nullable({ type: 'string' }),
    indexed_at: nullable(ts),
    activated_at: nullable(ts),
    archived_at: nullable(ts),
    documents: {
      type: 'array',
      items: obj({
        id: { type: 'string', format: 'uuid' },
        file_name: { type: 'string' },
        url: nullable({ type: 'string' }),
        format: nullable({ type: 'string' }),
        size: nullable({ type: 'integer' }),
        sha256: nullable({ type: 'string' }),
        status: {
          enum: ['pending', 'extracting', 'done', 'failed', 'skipped'],
          description: 'skipped: not read, because another document of the version failed (its error says which).',
        },
        error: nullable({ type: 'string' }),
        pages_total: { type: 'integer' },
        pages_done: { type: 'integer' },
      }),
    },
  }),
  Source: obj(
    {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      kind: { enum: ['files', 'url'] },
      status: { enum: ['indexing', 'ready', 'failed', 'archived'], description: 'Of the newest version.' },
      current_version: nullable({ type: 'integer', description: 'The version agents use.' }),
      latest_version: nullable(ref('SourceVersion')),
      versions: { type: 'array', items: ref('SourceVersion') },
      used_by: { type: 'array', items: { type: 'string' }, description: 'Agents listing the source.' },
      created_at: ts,
      updated_at: ts,
      links: obj({ self: { type: 'string' } }),
    },
    ['id', 'name', 'kind', 'status', 'current_version', 'latest_version', 'used_by', 'created_at', 'updated_at'],
  ),
  SkillVersion: obj({
    version: { type: 'integer' },
    description: { type: 'string' },
    size: { type: 'integer', description: 'Bytes of content (UTF-8).' },
    sha256: { type: 'string' },
    created_by: { type: 'string' },
    created_at: ts,
    links: obj({ content: { type: 'string' } }),
  }),
  Skill: obj(
    {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string', description: 'How agents list it in "skills" ("name", or "name@<version>" to pin one).' },
      description: { type: 'string', description: 'Of the newest version.' },
      latest_version: ref('SkillVersion'),
      versions: { type: 'array', items: ref('SkillVersion'), description: 'Newest first.' },
      used_by: { type: 'array', items: { type: 'string' }, description: 'Agents listing the skill.' },
      created_by: { type: 'string' },
      created_at: ts,
      updated_at: ts,
      archived_at: nullable(ts),
      links: obj({ self: { type: 'string' } }),
    },
    ['id', 'name', 'description', 'latest_version', 'used_by', 'created_by', 'created_at', 'updated_at', 'archived_at'],
  ),
  SkillUsed: obj({
    name: { type: 'string' },
    kind: { enum: ['user', 'platform'] },
    version: nullable({ type: 'integer', description: "A user skill's version; null for a platform skill." }),
  }),
  Passage: obj({
    passage_id: { type: 'string' },
    source: { type: 'string' },
    source_id: { type: 'string', format: 'uuid' },
    version: { type: 'integer' },
    document: { type: 'string' },
    page: nullable({ type: 'integer' }),
    paragraph: { type: 'integer' },
    part: { type: 'integer' },
    text: { type: 'string' },
    boxes: nullable({ type: 'array', items: ref('Box') }),
    page_size: nullable(obj({ width: { type: 'number' }, height: { type: 'number' }, unit: { enum: ['pt', 'px'] } })),
    ocr_confidence: nullable({ type: 'number' }),
    score: { type: 'number', description: 'Reciprocal rank fusion of full-text and vector ranks.' },
    citation_url: { type: 'string' },
  }),
  Box: {
    ...obj({ x: { type: 'number' }, y: { type: 'number' }, width: { type: 'number' }, height: { type: 'number' } }),
    description: "A line's box in page units (PDF points or image pixels) from the page's top-left corner.",
  },
  Citation: obj({
    id: { type: 'string' },
    source: obj({ id: { type: 'string', format: 'uuid' }, name: { type: 'string' } }),
    version: { type: 'integer' },
    version_status: { enum: ['indexing', 'ready', 'failed', 'archived'] },
    document: obj({ id: { type: 'string' }, file_name: { type: 'string' }, format: nullable({ type: 'string' }) }),
    page: nullable({ type: 'integer' }),
    paragraph: { type: 'integer' },
    part: { type: 'integer' },
    text: { type: 'string' },
    boxes: nullable({ type: 'array', items: ref('Box') }),
    words: nullable({
      type: 'array',
      items: obj({ text: { type: 'string' }, confidence: { type: 'number' }, box: ref('Box') }),
    }),
    ocr_confidence: nullable({ type: 'number' }),
    page_size: nullable(obj({ width: { type: 'number' }, height: { type: 'number' }, unit: { enum: ['pt', 'px'] } })),
    ocr: { type: 'boolean' },
    page_image_url: nullable({ type: 'string' }),
    highlighted_image_url: nullable({ type: 'string' }),
  }),
  PublicRun: obj({
    id: { type: 'string' },
    status: { enum: [...runStatuses] },
    created_at: ts,
    ended_at: nullable(ts),
    counts,
    error: nullable({ type: 'string' }),
    outputs: { type: 'array', items: obj({ node_id: { type: 'string' }, data: {} }) },
    files: {
      type: 'array',
      items: obj({
        id: { type: 'string' },
        name: { type: 'string' },
        size: { type: 'integer' },
        content_type: { type: 'string' },
      }),
    },
  }),
  StateEntry: obj({ key: { type: 'string' }, value: {}, version: { type: 'integer' }, updated_at: ts }),
  RunLink: obj(
    {
      id: { type: 'string', format: 'uuid' },
      agent_id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      created_at: ts,
      revoked_at: nullable(ts),
      active: { type: 'boolean', description: "Honoured only while the agent's policy allows public access." },
      token: { type: 'string', description: 'Only when created.' },
      url: { type: 'string', description: 'The page the link opens: only when created.' },
      warning: { type: 'string', description: 'When created while the policy does not allow public access.' },
    },
    ['id', 'agent_id', 'name', 'created_at', 'revoked_at', 'active'],
  ),
  FormDefinition: obj({
    id: { type: 'string', format: 'uuid' },
    title: { type: 'string' },
    description: { type: 'string' },
    fields: formFields,
    submit_label: { type: 'string' },
    accepting: { type: 'boolean', description: 'Whether the agent is live.' },
  }),
  Tool: obj({
    name: { type: 'string' },
    description: { type: 'string' },
    side_effect: { enum: ['read', 'state', 'files', 'external'] },
    approval_default: { enum: ['always', 'never'] },
    input_schema: { type: 'object', description: "JSON Schema of the tool's arguments." },
  }),
  WizardSession: obj({
    id: { type: 'string', format: 'uuid' },
    goal: { type: 'string' },
    files: {
      type: 'array',
      description: 'Files uploaded with the goal; each became a source of that name, which the agent lists.',
      items: obj({
        name: { type: 'string' },
        format: { type: 'string' },
        size: { type: 'integer' },
        source: { type: 'string' },
      }),
    },
    questions: {
      type: 'array',
      items: obj({ question: { type: 'string' }, why: { type: 'string' }, answer: { type: 'string' } }, [
        'question',
        'why',
      ]),
    },
    instructions: nullable(jsonSchema(instructionPartsSchema, 'output')),
    connections: {
      type: 'array',
      description: 'The integrations the instructions need: a kind of connection, its name and what it is used for.',
      items: jsonSchema(proposedConnectionSchema, 'output'),
    },
    spec: nullable(jsonSchema(agentSpecSchema, 'output')),
    sample_input: nullable({ type: 'string', description: 'What the test run is proposed to process.' }),
    attempts: {
      type: 'array',
      description: 'Each generated graph and the problems it had (none: it validated).',
      items: obj({ problems: { type: 'array', items: { type: 'string' } }, at: { type: 'string' } }),
    },
    conversation: {
      type: 'array',
      description: 'The messages exchanged with the model, step by step: the creation history.',
      items: obj({ role: { enum: ['user', 'assistant'] }, step: { type: 'string' }, content: {} }),
    },
    usage: obj({
      input_tokens: { type: 'number' },
      output_tokens: { type: 'number' },
      cache_read_tokens: { type: 'number' },
      cost_usd: { type: 'number' },
    }),
    agent_id: nullable({ type: 'string', format: 'uuid' }),
    created_by: { type: 'string' },
    created_at: ts,
    updated_at: ts,
    model: obj({ available: { type: 'boolean' }, reason: nullable({ type: 'string' }) }),
  }),
  Conversation: obj({
    id: { type: 'string', format: 'uuid' },
    agent_id: nullable({ type: 'string', format: 'uuid' }),
    agent_name: nullable({ type: 'string' }),
    title: { type: 'string' },
    created_at: ts,
    updated_at: ts,
    usage: obj({
      input_tokens: { type: 'integer' },
      output_tokens: { type: 'integer' },
      cache_read_tokens: { type: 'integer' },
      cost_usd: { type: 'number' },
    }),
    links: obj({ self: { type: 'string' }, console: { type: 'string' } }),
  }),
  ChatMessage: obj({
    id: { type: 'string', format: 'uuid' },
    seq: { type: 'integer' },
    role: { enum: ['user', 'assistant'] },
    text: { type: 'string' },
    tool_calls: {
      type: 'array',
      items: obj({
        id: { type: 'string' },
        name: { type: 'string' },
        input: {},
        is_error: { type: 'boolean' },
        result: { type: 'string' },
      }),
    },
    runs: {
      type: 'array',
      description: 'The runs the answer relies on (started, read or explained).',
      items: obj({
        run_id: { type: 'string', format: 'uuid' },
        console_url: { type: 'string' },
        api_url: { type: 'string' },
      }),
    },
    usage: nullable(
      obj({
        input_tokens: { type: 'integer' },
        output_tokens: { type: 'integer' },
        cache_read_tokens: { type: 'integer' },
        cost_usd: { type: 'number' },
      }),
    ),
    created_at: ts,
  }),
  ChatModel: obj({
    configured: { type: 'boolean' },
    name: nullable({ type: 'string' }),
    hint: nullable({ type: 'string', description: 'What to set when no model is configured.' }),
  }),
  DayStats: obj({
    date: { type: 'string', format: 'date' },
    runs: { type: 'integer' },
    by_status: { type: 'object', additionalProperties: { type: 'integer' } },
    items: { type: 'integer' },
    failed_items: { type: 'integer' },
    avg_duration_ms: nullable({ type: 'number' }),
    cost_usd: { type: 'number' },
  }),
};
// What a cancel answers: the run as the cancel left it. `cancelling` while its workflow winds down (closes its open
// approvals, stores it cancelled with its counts); `cancelled` once it has; the status it ended with had it ended
// otherwise before the cancel reached it.
const runSchema = schemas.Run as ReturnType<typeof obj>;
schemas.CancelledRun = {
  ...runSchema,
  properties: {
    ...runSchema.properties,
    status: {
      enum: ['cancelling', ...runStatuses.filter((s) => !['running', 'paused', 'needs_review'].includes(s))],
      description:
        '`cancelling` while the workflow winds down (open approvals closed, items done keep their results), `cancelled` once it has ended; another end status if the run ended before the cancel reached it.',
    },
  },
};

// ---- Route metadata: what each route file declares beside its handlers ----------------------------------------
/** What a route needs (db/roles.ts): a key scope or role, `session` for a signed-in person's own routes, or nothing. */
export type Scope = Permission | 'session' | 'public';
/** A route's metadata, declared in its route file (api/routes/*.ts); api/openapi.ts makes it an operation. */
export interface Route {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  id: string;
  summary: string;
  scope: Scope;
  body?: Record<string, unknown>;
  /** Request media types other than JSON (a multipart upload), instead of `body`. */
  bodyContent?: Record<string, { schema: unknown }>;
  /** Status → response schema; `null` for an empty body, `'file'`/`'events'` for binary or SSE, or `sse(...)`. */
  ok: Record<number, unknown>;
  /** Problem statuses besides the ones every route of its kind can answer. */
  errors?: number[];
}

export const runBody = jsonSchema(bodies.runAgent);
export const anyObject = { type: 'object' };
/** A server-sent event stream whose events are described (name → what its `data` JSON holds). */
export const sse = (description: string, events: Record<string, unknown>) => ({ sse: { description, events } });
