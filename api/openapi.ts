// The OpenAPI 3.1 document of API v1 (GET /v1/openapi.json). Request bodies and query parameters are the very zod
// schemas the routes validate with (agent spec, trigger input, run body, api/query-params.ts…), turned into JSON
// Schema 2020-12 by zod itself; the response shapes are declared here, and the test suite checks every response it
// receives against them (test/support/openapi-check.ts), so the document cannot drift from what the API answers.
import { z } from 'zod';
import { bodies, sourceName } from './request-bodies';
import { queries, queryParameters } from './query-params';
import { reviewStatuses } from '../model/review';
import { approvalStatuses, itemStatuses, runStatuses, triggers } from '../db/runs';
import { scopes } from '../db/api-keys';
import { agentSpecSchema } from '../model/agent';
import {
  chainEndStatuses,
  formFieldSchema,
  scheduleConfigSchema,
  triggerInputSchema,
  triggerKinds,
} from '../model/trigger';
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
import { maxSkillBytes } from '../model/skill';
import { instructionPartsSchema, proposedConnectionSchema } from '../model/wizard';
import { authenticationResults } from '../model/inbox';

/** A zod schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect), without the per-schema `$schema` marker. */
const jsonSchema = (schema: z.ZodType, io: 'input' | 'output' = 'input') => {
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
const ts = { type: 'string', format: 'date-time' };
const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
/** An Inbox thread's connected mailbox (an email.received trigger's), which its replies go out from. */
const mailboxOfThread = {
  ...nullable({ type: 'string' }),
  description:
    "the connected mailbox the thread's mail came through, which replies are sent from; null: the agent's address",
};
const obj = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const list = (item: object) => obj({ data: { type: 'array', items: item }, next_cursor: nullable({ type: 'string' }) });
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
const schemas: Record<string, unknown> = {
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

// ---- Routes --------------------------------------------------------------------------------------------------
/** What a route needs (db/roles.ts): a key scope or role, `session` for a signed-in person's own routes, or nothing. */
type Scope = Permission | 'session' | 'public';
interface Route {
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

const runBody = jsonSchema(bodies.runAgent);
const anyObject = { type: 'object' };
/** A webhook delivery or form submission that the trigger's filter conditions turned away. */
/** A delivery that started its run, or (a micro-batching trigger) was stored to join the next batch's run. */
const hookAccepted = {
  oneOf: [
    obj({ status: { const: 'started' }, run_id: { type: 'string', format: 'uuid' }, run: ref('Run') }),
    obj({
      status: { const: 'accepted' },
      delivery_id: { type: 'string', format: 'uuid' },
      run_id: { type: 'null' },
      run: { type: 'null' },
    }),
  ],
};
const filteredOut = obj({ status: { const: 'filtered_out' }, run: { type: 'null' }, detail: { type: 'string' } });
const r = (route: Route) => route;
/** A server-sent event stream whose events are described (name → what its `data` JSON holds). */
const sse = (description: string, events: Record<string, unknown>) => ({ sse: { description, events } });

export const routes: Route[] = [
  r({
    method: 'get',
    path: '/auth/sso/discover',
    id: 'discoverSso',
    summary: "Single sign-on: the workspace whose provider signs in this email's domain (?email=)",
    scope: 'public',
    ok: { 200: obj({ workspace_id: { type: 'string', format: 'uuid' }, start_url: { type: 'string' } }) },
    errors: [400, 404],
  }),
  r({
    method: 'get',
    path: '/auth/sso/{workspaceId}/start',
    id: 'startSso',
    summary: "Single sign-on: redirects to the workspace's OpenID Connect provider (PKCE, state, nonce)",
    scope: 'public',
    ok: { 302: null },
    errors: [404, 422, 502],
  }),
  r({
    method: 'get',
    path: '/auth/sso/callback',
    id: 'finishSso',
    summary:
      "Single sign-on: the provider's redirect back; signs in and redirects to the console (or to /login with the reason)",
    scope: 'public',
    ok: { 302: null },
  }),
  r({
    method: 'get',
    path: '/workspace/sso',
    id: 'getSso',
    summary: 'The single sign-on provider of the workspace (never its secret)',
    scope: 'admin',
    ok: { 200: ref('SsoSettings') },
  }),
  r({
    method: 'put',
    path: '/workspace/sso',
    id: 'configureSso',
    summary: 'Set up single sign-on with an OpenID Connect provider (Enterprise plan; checked by discovery)',
    scope: 'admin',
    body: jsonSchema(bodies.configureSso),
    ok: { 200: ref('SsoSettings') },
    errors: [409, 422],
  }),
  r({
    method: 'delete',
    path: '/workspace/sso',
    id: 'removeSso',
    summary: 'Turn single sign-on off',
    scope: 'admin',
    ok: { 204: null },
  }),
  r({
    method: 'put',
    path: '/workspace/plan',
    id: 'changePlan',
    summary: "Change the workspace's plan (owner): an upgrade at once, a downgrade at the end of the billing period",
    scope: 'owner',
    body: jsonSchema(bodies.changePlan),
    ok: {
      200: obj({
        plan: { type: 'string' },
        pending_plan: nullable({ type: 'string' }),
        plan_changes_at: nullable(ts),
      }),
    },
    errors: [422],
  }),
  r({
    method: 'delete',
    path: '/me',
    id: 'deleteAccount',
    summary:
      'Delete your account (needs the password): it and the workspaces you alone own become inaccessible at once, recoverable until erase_at, then erased',
    scope: 'session',
    body: jsonSchema(bodies.passwordOnly),
    ok: {
      202: obj({
        status: { const: 'deleted' },
        erase_at: ts,
        workspaces_deleted: { type: 'array', items: { type: 'string', format: 'uuid' } },
      }),
    },
    errors: [403, 422],
  }),
  r({
    method: 'post',
    path: '/auth/recover',
    id: 'recoverAccount',
    summary: 'Recover a deleted account within its recovery period, with its email and password; signs in',
    scope: 'public',
    body: jsonSchema(bodies.recoverAccount),
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 409, 410, 415, 422],
  }),
  r({
    method: 'post',
    path: '/auth/signup',
    id: 'signUp',
    summary: 'Create an account and its own workspace (owner), and sign in',
    scope: 'public',
    body: jsonSchema(bodies.signUp),
    ok: { 201: ref('SignedIn') },
    errors: [400, 409, 415, 422],
  }),
  r({
    method: 'post',
    path: '/auth/login',
    id: 'signIn',
    summary: 'Sign in with email and password (and a TOTP or recovery code when two-factor is on); throttled',
    scope: 'public',
    body: jsonSchema(bodies.signIn),
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 403, 415, 422, 429],
  }),
  r({
    method: 'post',
    path: '/auth/password-reset',
    id: 'requestPasswordReset',
    summary: 'Email a one-hour reset link (the same answer whether or not the address has an account)',
    scope: 'public',
    body: jsonSchema(bodies.requestPasswordReset),
    ok: { 202: obj({ status: { type: 'string' }, detail: { type: 'string' } }) },
    errors: [400, 415, 422],
  }),
  r({
    method: 'post',
    path: '/auth/password-reset/confirm',
    id: 'resetPassword',
    summary: 'Set a new password with a reset link; every session of the account ends',
    scope: 'public',
    body: jsonSchema(bodies.confirmPasswordReset),
    ok: { 204: null },
    errors: [400, 410, 415, 422],
  }),
  r({
    method: 'post',
    path: '/auth/logout',
    id: 'signOut',
    summary: 'End this session',
    scope: 'session',
    ok: { 204: null },
  }),
  r({
    method: 'post',
    path: '/auth/logout-everywhere',
    id: 'signOutEverywhere',
    summary: 'End every session of the account',
    scope: 'session',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/me',
    id: 'getMe',
    summary: 'The signed-in person, their workspaces and roles',
    scope: 'session',
    ok: { 200: ref('Me') },
  }),
  r({
    method: 'put',
    path: '/me/workspace',
    id: 'switchWorkspace',
    summary: 'Work in another of your workspaces',
    scope: 'session',
    body: jsonSchema(bodies.switchWorkspace),
    ok: { 200: ref('Me') },
    errors: [404, 422],
  }),
  r({
    method: 'post',
    path: '/workspaces',
    id: 'createWorkspace',
    summary: 'A new workspace you own (the Free plan allows one)',
    scope: 'session',
    body: jsonSchema(bodies.createWorkspace),
    ok: { 201: ref('Me') },
    errors: [403, 422],
  }),
  r({
    method: 'post',
    path: '/me/password',
    id: 'changePassword',
    summary: 'Change your password; your other sessions end',
    scope: 'session',
    body: jsonSchema(bodies.changePassword),
    ok: { 204: null },
    errors: [403, 422],
  }),
  r({
    method: 'post',
    path: '/me/two-factor',
    id: 'startTwoFactor',
    summary: 'Begin two-factor setup: a TOTP secret and its otpauth:// URL',
    scope: 'session',
    ok: { 200: obj({ secret: { type: 'string' }, otpauth_url: { type: 'string' } }) },
  }),
  r({
    method: 'post',
    path: '/me/two-factor/confirm',
    id: 'confirmTwoFactor',
    summary: 'Turn two-factor on with a first code; answers ten one-time recovery codes (shown once)',
    scope: 'session',
    body: jsonSchema(bodies.totpCode),
    ok: { 200: obj({ recovery_codes: { type: 'array', items: { type: 'string' } } }) },
    errors: [409, 422],
  }),
  r({
    method: 'delete',
    path: '/me/two-factor',
    id: 'disableTwoFactor',
    summary: 'Turn two-factor off (needs the password)',
    scope: 'session',
    body: jsonSchema(bodies.passwordOnly),
    ok: { 204: null },
    errors: [403, 422],
  }),
  r({
    method: 'get',
    path: '/public/invitations/{token}',
    id: 'openInvitation',
    summary: 'What an invitation link offers',
    scope: 'public',
    ok: {
      200: obj({
        workspace_name: { type: 'string' },
        role: { enum: [...roles] },
        email: nullable({ type: 'string' }),
        expires_at: ts,
      }),
    },
    errors: [404, 410],
  }),
  r({
    method: 'post',
    path: '/public/invitations/{token}/accept',
    id: 'acceptInvitation',
    summary: 'Join: as the signed-in person, or with an email and password (an existing account or a new one)',
    scope: 'public',
    // A signed-in person accepts as themselves with an empty body; otherwise email and password name the account.
    body: {
      ...jsonSchema(bodies.acceptInvitation.partial()),
      anyOf: [{ required: ['email', 'password'] }, { maxProperties: 0 }],
    },
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 403, 404, 410, 415, 422],
  }),
  r({
    method: 'get',
    path: '/members',
    id: 'listMembers',
    summary: 'Members of the workspace and their roles, in the order they joined (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Member')) },
  }),
  r({
    method: 'patch',
    path: '/members/{userId}',
    id: 'changeMemberRole',
    summary: "Change a member's role (only an owner grants or removes ownership; one owner always remains)",
    scope: 'admin',
    body: jsonSchema(bodies.changeRole),
    ok: { 200: ref('Member') },
    errors: [409, 422],
  }),
  r({
    method: 'delete',
    path: '/members/{userId}',
    id: 'removeMember',
    summary: 'Remove a member from the workspace',
    scope: 'admin',
    ok: { 204: null },
    errors: [409],
  }),
  r({
    method: 'get',
    path: '/invitations',
    id: 'listInvitations',
    summary: 'Invitations of the workspace',
    scope: 'admin',
    ok: { 200: list(ref('Invitation')) },
  }),
  r({
    method: 'post',
    path: '/invitations',
    id: 'createInvitation',
    summary: 'Invite by link (emailed too when an address is given and SMTP is configured); valid 7 days, once',
    scope: 'admin',
    body: jsonSchema(bodies.createInvitation),
    ok: { 201: ref('Invitation') },
    errors: [422],
  }),
  r({
    method: 'delete',
    path: '/invitations/{id}',
    id: 'revokeInvitation',
    summary: 'Withdraw an open invitation',
    scope: 'admin',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/audit-log',
    id: 'listAuditEvents',
    summary: 'Security and configuration events, newest first (Professional and Enterprise plans)',
    scope: 'admin',
    ok: { 200: list(ref('AuditEvent')) },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/agents',
    id: 'listAgents',
    summary: 'Agents of the workspace',
    scope: 'read',
    ok: { 200: list(ref('Agent')) },
  }),
  r({
    method: 'post',
    path: '/agents',
    id: 'createAgent',
    summary: 'Create an agent (Draft, version 1)',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 201: ref('Agent') },
    errors: [403, 422],
  }),
  r({
    method: 'post',
    path: '/agents/import',
    id: 'importAgent',
    summary: 'Import an exported agent as a Draft',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 201: ref('Agent') },
    errors: [403, 422],
  }),
  r({
    method: 'get',
    path: '/agents/{id}',
    id: 'getAgent',
    summary: 'An agent with the spec of its current version',
    scope: 'read',
    ok: { 200: ref('Agent') },
  }),
  r({
    method: 'put',
    path: '/agents/{id}',
    id: 'updateAgent',
    summary: 'Save a new version',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 200: ref('Agent') },
    errors: [422],
  }),
  r({
    method: 'delete',
    path: '/agents/{id}',
    id: 'deleteAgent',
    summary: 'Delete an agent and its schedules',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'post',
    path: '/agents/{id}/duplicate',
    id: 'duplicateAgent',
    summary: 'A Draft copy',
    scope: 'manage',
    ok: { 201: ref('Agent') },
    errors: [403],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/diff',
    id: 'diffVersions',
    summary: 'Changes between two versions (?from=&to=)',
    scope: 'read',
    ok: {
      200: obj({
        from: { type: 'integer' },
        to: { type: 'integer' },
        changes: {
          type: 'array',
          description: 'Each changed path, with its value before and after (absent on the side without it).',
          items: obj({ path: { type: 'string' }, from: {}, to: {} }, ['path']),
        },
      }),
    },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/versions',
    id: 'listVersions',
    summary: 'Saved versions, newest first',
    scope: 'read',
    ok: { 200: list(obj({ version: { type: 'integer' }, created_at: ts })) },
  }),
  r({
    method: 'get',
    path: '/agents/{id}/versions/{version}',
    id: 'getVersion',
    summary: 'One saved version',
    scope: 'read',
    ok: { 200: obj({ version: { type: 'integer' }, spec: anyObject }) },
  }),
  r({
    method: 'post',
    path: '/agents/{id}/versions/{version}/restore',
    id: 'restoreVersion',
    summary: 'Save an old version again as the newest',
    scope: 'manage',
    ok: { 200: ref('Agent') },
  }),
  r({
    method: 'get',
    path: '/agents/{id}/export',
    id: 'exportAgent',
    summary: 'The spec as a JSON file',
    scope: 'read',
    ok: { 200: anyObject },
  }),
  r({
    method: 'post',
    path: '/agents/{id}/state',
    id: 'setAgentState',
    summary: 'Move through the lifecycle',
    scope: 'manage',
    body: jsonSchema(bodies.setAgentState),
    ok: { 200: ref('Agent') },
    errors: [409, 422],
  }),
  r({
    method: 'post',
    path: '/agents/{id}/run',
    id: 'runAgent',
    summary: 'Start a run of a Live agent (spec §4); Idempotency-Key supported',
    scope: 'run',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  }),
  r({
    method: 'post',
    path: '/agents/{id}/manual-run',
    id: 'runAgentManually',
    summary: 'The same start, recorded as manual',
    scope: 'run',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  }),
  r({
    method: 'post',
    path: '/agents/{id}/test-run',
    id: 'testRunAgent',
    summary: 'A test run, in any state',
    scope: 'manage',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [422, 429, 503],
  }),
  r({
    method: 'post',
    path: '/agents/{id}/test-runs',
    id: 'startTestRunOnPastItems',
    summary: 'Test a version on past items, in test mode (tools that act elsewhere only plan their effect)',
    scope: 'manage',
    body: jsonSchema(bodies.startTestRun),
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/test-runs/{runId}',
    id: 'getTestRunOnPastItems',
    summary: 'A test run on past items compared item by item with the runs they came from',
    scope: 'read',
    ok: { 200: ref('TestRunComparison') },
  }),
  r({
    method: 'get',
    path: '/agents/{id}/state-store',
    id: 'listState',
    summary: "The agent's durable key/value entries by key (?limit=&cursor=)",
    scope: 'read',
    ok: { 200: list(ref('StateEntry')) },
  }),
  r({
    method: 'get',
    path: '/agents/{id}/state-store/{key}',
    id: 'getState',
    summary: 'One entry',
    scope: 'read',
    ok: { 200: ref('StateEntry') },
  }),
  r({
    method: 'put',
    path: '/agents/{id}/state-store/{key}',
    id: 'putState',
    summary: 'Set an entry (expected_version for optimistic concurrency)',
    scope: 'manage',
    body: jsonSchema(bodies.putState),
    ok: { 200: ref('StateEntry') },
    errors: [409, 422],
  }),
  r({
    method: 'delete',
    path: '/agents/{id}/state-store/{key}',
    id: 'deleteState',
    summary: 'Remove an entry',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/agents/{id}/triggers',
    id: 'listTriggers',
    summary: 'Schedules, webhooks, forms and chains of the agent',
    scope: 'read',
    ok: { 200: list(ref('Trigger')) },
  }),
  r({
    method: 'post',
    path: '/agents/{id}/triggers',
    id: 'createTrigger',
    summary: 'Add a trigger',
    scope: 'manage',
    body: jsonSchema(triggerInputSchema),
    ok: { 201: ref('Trigger') },
    errors: [422],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/timeline',
    id: 'agentTimeline',
    summary: 'Activity timeline, newest first',
    scope: 'read',
    ok: { 200: list(ref('TimelineEvent')) },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/run-links',
    id: 'listRunLinks',
    summary: 'Run Mode links',
    scope: 'read',
    ok: { 200: list(ref('RunLink')) },
  }),
  r({
    method: 'post',
    path: '/agents/{id}/run-links',
    id: 'createRunLink',
    summary: 'A Run Mode link (token shown once)',
    scope: 'manage',
    body: jsonSchema(bodies.createRunLink),
    ok: { 201: ref('RunLink') },
    errors: [422],
  }),
  r({
    method: 'delete',
    path: '/run-links/{id}',
    id: 'revokeRunLink',
    summary: 'Revoke a Run Mode link',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/triggers/{id}',
    id: 'getTrigger',
    summary: 'A trigger',
    scope: 'read',
    ok: { 200: ref('Trigger') },
  }),
  r({
    method: 'put',
    path: '/triggers/{id}',
    id: 'updateTrigger',
    summary: 'Change a trigger',
    scope: 'manage',
    body: jsonSchema(triggerInputSchema),
    ok: { 200: ref('Trigger') },
    errors: [422],
  }),
  r({
    method: 'delete',
    path: '/triggers/{id}',
    id: 'deleteTrigger',
    summary: 'Remove a trigger (and its schedule)',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'post',
    path: '/triggers/{id}/rotate-secret',
    id: 'rotateWebhookSecret',
    summary: 'A new webhook signing secret (shown once)',
    scope: 'manage',
    ok: { 200: ref('Trigger') },
    errors: [409],
  }),
  r({
    method: 'post',
    path: '/triggers/{id}/fire',
    id: 'fireSchedule',
    summary: 'Run a schedule now',
    scope: 'run',
    ok: { 202: obj({ fired: { type: 'boolean' }, trigger_id: { type: 'string' } }) },
    errors: [409, 503],
  }),
  r({
    method: 'post',
    path: '/schedules/preview',
    id: 'previewSchedule',
    summary: 'Description and next fire times of a schedule',
    scope: 'read',
    body: jsonSchema(scheduleConfigSchema),
    ok: {
      200: obj({
        description: { type: 'string' },
        policies: { type: 'string' },
        timezone: { type: 'string' },
        next_fire_times: {
          type: 'array',
          items: ts,
          description: "Temporal's own: a paused throwaway schedule with this spec, described and deleted.",
        },
      }),
    },
    errors: [422],
  }),
  r({
    method: 'get',
    path: '/runs',
    id: 'listRuns',
    summary: 'Runs, newest first (?agent_id=&status=&trigger=&from=&to=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Run')) },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/runs/{id}',
    id: 'getRun',
    summary: 'A run with node activity, approvals, outputs and files',
    scope: 'read',
    ok: {
      200: {
        allOf: [
          ref('Run'),
          obj({
            node_activity: {
              type: 'array',
              items: obj({
                node_id: { type: 'string' },
                kind: { type: 'string' },
                items_in: { type: 'integer' },
                items_done: { type: 'integer' },
                items_failed: { type: 'integer' },
                started_at: ts,
                ended_at: nullable(ts),
              }),
            },
            approvals: { type: 'array', items: ref('Approval') },
            retried_by: {
              type: 'array',
              items: { type: 'string', format: 'uuid' },
              description: 'The runs that retry this run’s failed items, newest first.',
            },
            item_sources: {
              type: 'array',
              description: 'For a retry or a test run on past items: the runs its items come from, and which.',
              items: obj({
                run_id: { type: 'string', format: 'uuid' },
                items: { type: 'array', items: { type: 'integer' } },
              }),
            },
            retry: obj({
              failed_items: { type: 'integer', description: 'Failed items no retry has taken yet.' },
              retryable_items: { type: 'array', items: { type: 'integer' } },
              held_back_items: {
                type: 'array',
                items: { type: 'integer' },
                description:
                  'Failed items a retry leaves out: a call of theirs may have acted with no answer recorded.',
              },
            }),
            outputs: { type: 'array', items: obj({ node_id: { type: 'string' }, data: {} }) },
            files: {
              type: 'array',
              items: obj({
                id: { type: 'string', format: 'uuid' },
                name: { type: 'string' },
                content_type: { type: 'string' },
                size: { type: 'integer' },
                created_at: ts,
                url: { type: 'string' },
              }),
            },
          }),
        ],
      },
    },
  }),
  r({
    method: 'get',
    path: '/runs/{id}/items',
    id: 'listRunItems',
    summary: 'Items with output and error (?status=&cursor=&from_seq=)',
    scope: 'read',
    ok: {
      200: list(
        obj(
          {
            seq: { type: 'integer' },
            status: { enum: [...itemStatuses] },
            data: {},
            output: {},
            error: nullable({ type: 'string' }),
            node_id: nullable({ type: 'string' }),
            reasoning: nullable({ type: 'array', description: "The model's reasoning steps, when it reasoned." }),
            usage: nullable({ type: 'object' }),
          },
          ['seq', 'status', 'data', 'output', 'error', 'node_id', 'reasoning', 'usage'],
        ),
      ),
    },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/runs/{id}/logs',
    id: 'listRunLogs',
    summary: 'Log lines, oldest first',
    scope: 'read',
    ok: {
      200: list(
        obj({
          seq: { type: 'integer' },
          at: ts,
          level: { type: 'string' },
          node_id: nullable({ type: 'string' }),
          item_seq: nullable({ type: 'integer' }),
          message: { type: 'string' },
        }),
      ),
    },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/runs/{id}/events',
    id: 'runEvents',
    summary: 'Live progress as server-sent events',
    scope: 'read',
    ok: { 200: 'events' },
  }),
  r({
    method: 'get',
    path: '/runs/{id}/files/{fileId}',
    id: 'downloadRunFile',
    summary: 'A file the run made',
    scope: 'read',
    ok: { 200: 'file' },
  }),
  r({
    method: 'get',
    path: '/runs/{id}/approvals',
    id: 'listRunApprovals',
    summary: 'Approvals of a run',
    scope: 'read',
    ok: { 200: list(ref('Approval')) },
  }),
  r({
    method: 'post',
    path: '/runs/{id}/retry',
    id: 'retryRun',
    summary:
      'Retry failed items in a new run (linked by `retry_of`/`retried_by`); items whose call may have acted are held back',
    scope: 'run',
    body: jsonSchema(bodies.retryRun),
    ok: {
      202: {
        allOf: [
          ref('Run'),
          obj({
            retried_items: { type: 'array', items: { type: 'integer' } },
            held_back: { type: 'array', items: ref('HeldBackItem') },
          }),
        ],
      },
    },
    errors: [409, 422, 429, 503],
  }),
  r({
    method: 'post',
    path: '/runs/{id}/cancel',
    id: 'cancelRun',
    summary: 'Cancel a run: answers what the cancel did (`cancelling`, or `cancelled` once its workflow has ended)',
    scope: 'run',
    ok: { 202: ref('CancelledRun') },
    errors: [409],
  }),
  r({
    method: 'post',
    path: '/runs/{id}/pause',
    id: 'pauseRun',
    summary:
      'Pause a run: steps under way finish, nothing new starts, approvals can still be decided; answers the run `paused` (a paused run answers as it is)',
    scope: 'run',
    ok: { 202: ref('Run') },
    errors: [409],
  }),
  r({
    method: 'post',
    path: '/runs/{id}/resume',
    id: 'resumeRun',
    summary:
      'Resume a paused run where it stopped; answers the run `running` or `needs_review` (a run not paused answers as it is)',
    scope: 'run',
    ok: { 202: ref('Run') },
    errors: [409],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/inbox',
    id: 'listInboxThreads',
    summary:
      "The agent's Inbox: its address and its threads, newest activity first (?limit=&cursor=), each with its last message and the runs its requests started",
    scope: 'read',
    ok: {
      200: obj({
        address: { type: 'string' },
        data: {
          type: 'array',
          items: obj({
            id: { type: 'string', format: 'uuid' },
            agent_id: { type: 'string', format: 'uuid' },
            subject: { type: 'string' },
            connection: mailboxOfThread,
            created_at: ts,
            last_message_at: ts,
            message_count: { type: 'integer' },
            last_message: nullable(ref('InboxMessage')),
            runs: {
              type: 'array',
              items: obj({ id: { type: 'string', format: 'uuid' }, status: { enum: [...runStatuses] } }),
            },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
  }),
  r({
    method: 'get',
    path: '/inbox/threads/{id}',
    id: 'getInboxThread',
    summary: "An Inbox thread's messages in order, requests with the run each started, and the agent's replies",
    scope: 'read',
    ok: {
      200: obj({
        id: { type: 'string', format: 'uuid' },
        agent_id: { type: 'string', format: 'uuid' },
        agent_name: { type: 'string' },
        address: { type: 'string' },
        connection: mailboxOfThread,
        subject: { type: 'string' },
        created_at: ts,
        last_message_at: ts,
        messages: { type: 'array', items: ref('InboxMessage') },
      }),
    },
  }),
  r({
    method: 'get',
    path: '/approvals',
    id: 'listApprovals',
    summary: 'Approvals of the workspace or of one run, oldest first (?status=&run_id=&limit=&cursor=; at most 500)',
    scope: 'read',
    ok: { 200: list(ref('Approval')) },
    errors: [400],
  }),
  r({
    method: 'post',
    path: '/approvals/{id}/decision',
    id: 'decideApproval',
    summary: 'Approve, reject or approve with edits',
    scope: 'run',
    body: jsonSchema(bodies.decideApproval),
    ok: { 200: ref('Approval') },
    errors: [409, 422],
  }),
  r({
    method: 'get',
    path: '/reviews',
    id: 'listReviews',
    summary: 'The review queue: items flagged for review, oldest first (?status=pending&agent_id=&run_id=)',
    scope: 'read',
    ok: { 200: list(ref('Review')) },
    errors: [400],
  }),
  r({
    method: 'post',
    path: '/reviews/{id}/decision',
    id: 'decideReview',
    summary:
      'Decide a flagged item: accept (it goes on from the flag node, or is done with `output`), reject with a `reason` (it fails), or send_to a `node_id`',
    scope: 'run',
    body: jsonSchema(bodies.decideReview),
    ok: { 200: ref('Review') },
    errors: [404, 409, 422],
  }),
  r({
    method: 'get',
    path: '/api-keys',
    id: 'listApiKeys',
    summary: 'API keys of the workspace, oldest first, never their secrets (?limit=&cursor=)',
    scope: 'admin',
    ok: { 200: list(ref('ApiKey')) },
  }),
  r({
    method: 'get',
    path: '/connectors',
    id: 'listConnectors',
    summary:
      'The kinds of system connections can be made to (email, cloud storage, team chat, CRM, payments, calendar, warehouse): their settings, tools and events',
    scope: 'read',
    ok: { 200: list(ref('Connector')) },
  }),
  r({
    method: 'get',
    path: '/mcp-servers',
    id: 'listMcpServers',
    summary:
      'The MCP servers the operator declares (CADRE_MCP_STDIO_SERVERS), which the workers start and speak to over stdio: a connection of transport stdio names one; their commands and environments are not shown',
    scope: 'read',
    ok: { 200: list(ref('McpServer')) },
  }),
  r({
    method: 'get',
    path: '/connections',
    id: 'listConnections',
    summary: 'Integrations: the connections of the workspace by name, never their credentials (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Connection')) },
  }),
  r({
    method: 'post',
    path: '/connections',
    id: 'createConnection',
    summary:
      'Connect a system (a PostgreSQL or MySQL/MariaDB database, an MCP server, a REST API from its OpenAPI document, an OAuth 2.0 account): tested before it is saved; credentials sealed. An oauth2 connection is saved pending_authorization with a one-time authorization_url',
    scope: 'admin',
    body: jsonSchema(bodies.createConnection),
    ok: {
      201: {
        allOf: [
          ref('Connection'),
          {
            type: 'object',
            properties: {
              authorization_url: {
                type: 'string',
                description:
                  'oauth2: where a person signs in at the provider and grants access (one use, ten minutes); the provider sends the browser back to /v1/connections/oauth/callback',
              },
            },
          },
        ],
      },
    },
    errors: [409, 422],
  }),
  r({
    method: 'post',
    path: '/connections/{id}/authorize',
    id: 'authorizeConnection',
    summary: 'OAuth 2.0: a new one-time authorization_url, to authorize the account (again) at the provider',
    scope: 'admin',
    ok: { 200: obj({ authorization_url: { type: 'string' } }) },
    errors: [404, 409, 422],
  }),
  r({
    method: 'get',
    path: '/connections/oauth/callback',
    id: 'finishConnectionAuthorization',
    summary:
      "OAuth 2.0: the provider's redirect back (code and state); seals the tokens and redirects to the console's /integrations with ?connected= or ?connection_error=",
    scope: 'public',
    ok: { 302: null },
  }),
  r({
    method: 'get',
    path: '/connections/{id}',
    id: 'getConnection',
    summary: 'One connection',
    scope: 'read',
    ok: { 200: ref('Connection') },
    errors: [404],
  }),
  r({
    method: 'get',
    path: '/connections/{id}/document',
    id: 'getConnectionDocument',
    summary:
      "A REST API (openapi) connection's OpenAPI document, as it was fetched or given (connections answer only its summary); 409 not_openapi for other kinds",
    scope: 'read',
    ok: { 200: { type: 'object', description: 'The OpenAPI 3.x document.' } },
    errors: [404, 409],
  }),
  r({
    method: 'patch',
    path: '/connections/{id}',
    id: 'updateConnection',
    summary: 'Change settings or credentials (tested before they replace the old ones)',
    scope: 'admin',
    body: jsonSchema(bodies.updateConnection),
    ok: { 200: ref('Connection') },
    errors: [404, 422],
  }),
  r({
    method: 'delete',
    path: '/connections/{id}',
    id: 'deleteConnection',
    summary:
      'Remove a connection (an oauth2 one revokes its tokens at the provider first); runs that use it afterwards fail that step, saying so',
    scope: 'admin',
    ok: { 204: null },
    errors: [404],
  }),
  r({
    method: 'get',
    path: '/connections/{id}/tools',
    id: 'listConnectionTools',
    summary:
      "The tools agents can call through a connection: an MCP server's as it last listed them (`listed_at`; never asked with a read-only caller's request: 409 tools_not_listed until someone who may manage connections has listed them, which a manager's first read does), or a database's sql.* tools",
    scope: 'read',
    ok: { 200: list(ref('ConnectionTool')) },
    errors: [404, 409, 422],
  }),
  r({
    method: 'post',
    path: '/connections/{id}/tools/refresh',
    id: 'refreshConnectionTools',
    summary:
      "Ask an MCP server for its tools now, with the connection's stored headers, and keep the list (422 connection_failed with the reason when it cannot be reached)",
    scope: 'manage',
    ok: { 200: list(ref('ConnectionTool')) },
    errors: [404, 422],
  }),
  r({
    method: 'post',
    path: '/connections/{id}/test',
    id: 'testConnection',
    summary: 'Connect now and report; a failure marks the connection failing',
    scope: 'admin',
    ok: {
      200: obj(
        {
          ok: { type: 'boolean' },
          server_version: { type: 'string' },
          tools: {
            type: 'array',
            items: { type: 'string' },
            description: "an MCP server's tools, or a REST API's operations",
          },
          found: {
            type: 'array',
            items: { type: 'string' },
            description: "what the connection reaches: a warehouse's tables, a mailbox's folders, a bucket's prefixes",
          },
          detail: { type: 'string' },
        },
        ['ok'],
      ),
    },
    errors: [404],
  }),
  r({
    method: 'post',
    path: '/api-keys',
    id: 'createApiKey',
    summary: 'A new key (shown once)',
    scope: 'admin',
    body: jsonSchema(bodies.createApiKey),
    ok: { 201: ref('ApiKey') },
    errors: [422],
  }),
  r({
    method: 'post',
    path: '/api-keys/{id}/rotate',
    id: 'rotateApiKey',
    summary: 'Replace a key (the old one stops at once)',
    scope: 'admin',
    ok: { 201: ref('ApiKey') },
  }),
  r({
    method: 'delete',
    path: '/api-keys/{id}',
    id: 'revokeApiKey',
    summary: 'Revoke a key',
    scope: 'admin',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/usage',
    id: 'getUsage',
    summary: 'Plan and runs this month',
    scope: 'read',
    ok: {
      200: obj({
        plan: { type: 'string' },
        runs_this_month: { type: 'integer' },
        runs_per_month: nullable({ type: 'integer' }),
        pending_plan: nullable({ type: 'string' }),
        plan_changes_at: nullable(ts),
      }),
    },
  }),
  r({
    method: 'get',
    path: '/stats/daily',
    id: 'dailyStats',
    summary: 'Per day: runs by status, items, durations, cost (?days=&agent_id=)',
    scope: 'read',
    ok: { 200: obj({ days: { type: 'integer' }, data: { type: 'array', items: ref('DayStats') } }) },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/tools',
    id: 'listTools',
    summary: 'Built-in tools with their default approval',
    scope: 'read',
    ok: { 200: list(ref('Tool')) },
  }),
  r({
    method: 'post',
    path: '/hooks/{id}',
    id: 'deliverWebhook',
    summary: 'A webhook delivery (Standard Webhooks signature: webhook-id, webhook-timestamp, webhook-signature)',
    scope: 'public',
    body: anyObject,
    ok: {
      202: hookAccepted,
      200: filteredOut,
    },
    errors: [400, 401, 404, 409, 413, 422, 429, 503],
  }),
  r({
    method: 'get',
    path: '/forms/{id}',
    id: 'getForm',
    summary: "A form trigger's public definition",
    scope: 'public',
    ok: { 200: ref('FormDefinition') },
    errors: [404],
  }),
  r({
    method: 'post',
    path: '/forms/{id}/submissions',
    id: 'submitForm',
    summary: 'Submit a form (422 names each field; rate limited per client)',
    scope: 'public',
    body: anyObject,
    ok: {
      202: hookAccepted,
      200: filteredOut,
    },
    errors: [400, 404, 409, 413, 415, 422, 429, 503],
  }),
  r({
    method: 'get',
    path: '/public/run-links/{token}',
    id: 'openRunLink',
    summary: 'Run Mode: what the link opens',
    scope: 'public',
    ok: {
      200: obj({
        agent_name: { type: 'string' },
        description: { type: 'string' },
        input_format: { enum: ['auto', 'json', 'csv', 'tsv', 'lines', 'files'] },
        accepting: { type: 'boolean', description: 'Whether the agent is live.' },
      }),
    },
    errors: [403, 404],
  }),
  r({
    method: 'post',
    path: '/public/run-links/{token}/runs',
    id: 'startPublicRun',
    summary: 'Run Mode: start a run',
    scope: 'public',
    body: runBody,
    ok: { 202: ref('PublicRun') },
    errors: [400, 403, 404, 409, 413, 415, 422, 429, 503],
  }),
  r({
    method: 'get',
    path: '/public/run-links/{token}/runs/{runId}',
    id: 'getPublicRun',
    summary: 'Run Mode: a run started from the link',
    scope: 'public',
    ok: { 200: ref('PublicRun') },
    errors: [403, 404],
  }),
  r({
    method: 'get',
    path: '/public/run-links/{token}/runs/{runId}/files/{fileId}',
    id: 'downloadPublicRunFile',
    summary: 'Run Mode: a file of the run',
    scope: 'public',
    ok: { 200: 'file' },
    errors: [403, 404],
  }),
  r({
    method: 'get',
    path: '/sources',
    id: 'listSources',
    summary: 'Sources of the workspace by name, with their newest version (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Source')) },
  }),
  r({
    method: 'post',
    path: '/sources',
    id: 'addSources',
    summary: 'Upload files (several at once) or a URL; a name that exists adds a version that replaces it',
    scope: 'manage',
    bodyContent: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          properties: {
            name: {
              ...jsonSchema(sourceName),
              description: 'One source of all the files; without it, one per file.',
            },
            files: { type: 'array', items: { type: 'string', format: 'binary' }, maxItems: 20 },
          },
          required: ['files'],
        },
      },
      'application/json': { schema: jsonSchema(bodies.addSourceUrl) },
    },
    ok: { 202: obj({ data: { type: 'array', items: ref('Source') } }) },
    errors: [403],
  }),
  r({
    method: 'get',
    path: '/sources/{id}',
    id: 'getSource',
    summary: 'A source with all its versions and documents',
    scope: 'read',
    ok: { 200: ref('Source') },
  }),
  r({
    method: 'delete',
    path: '/sources/{id}',
    id: 'deleteSource',
    summary: 'Delete a source, its versions and passages',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/sources/{id}/versions/{version}/passages',
    id: 'listSourceVersionPassages',
    summary: "A version's passages in document order (archived versions too); ?limit, ?cursor",
    scope: 'read',
    ok: {
      200: list(
        obj({
          passage_id: { type: 'string' },
          document: { type: 'string' },
          page: nullable({ type: 'integer' }),
          paragraph: { type: 'integer' },
          part: { type: 'integer' },
          text: { type: 'string' },
          citation_url: { type: 'string' },
        }),
      ),
    },
    errors: [400],
  }),
  r({
    method: 'post',
    path: '/sources/search',
    id: 'searchSources',
    summary:
      'Search sources as a retrieve node does (current versions); a named source the workspace lacks is 422 unknown_sources, naming it',
    scope: 'read',
    body: jsonSchema(bodies.searchSources),
    ok: { 200: obj({ data: { type: 'array', items: ref('Passage') } }) },
    errors: [502],
  }),
  r({
    method: 'get',
    path: '/passages/{id}',
    id: 'openCitation',
    summary: 'A citation: the passage, its page, paragraph and boxes',
    scope: 'read',
    ok: { 200: ref('Citation') },
  }),
  r({
    method: 'get',
    path: '/passages/{id}/page-image',
    id: 'getCitationPageImage',
    summary: "The passage's page as a picture (?highlight=true draws its boxes)",
    scope: 'read',
    ok: { 200: 'file' },
  }),
  r({
    method: 'get',
    path: '/skills',
    id: 'listSkills',
    summary:
      "The workspace's skills (not archived) by name with their newest version (?limit=&cursor=), and the built-in platform skills",
    scope: 'read',
    ok: {
      200: obj({
        data: { type: 'array', items: ref('Skill') },
        platform: {
          type: 'array',
          description:
            'Built-in skills: a model step offered one of its tools gets it in its context (connection kinds for reference).',
          items: obj({
            name: { type: 'string' },
            description: { type: 'string' },
            tools: { type: 'array', items: { type: 'string' } },
            connection_kinds: { type: 'array', items: { enum: [...connectionKinds] } },
            content: { type: 'string' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
  }),
  r({
    method: 'post',
    path: '/skills',
    id: 'uploadSkill',
    summary: `Upload a skill (Markdown or text, at most ${maxSkillBytes / 1000} kB); a name that exists adds a version, which runs started from then on use`,
    scope: 'manage',
    body: jsonSchema(bodies.uploadSkill),
    ok: { 201: ref('Skill') },
  }),
  r({
    method: 'get',
    path: '/skills/{id}',
    id: 'getSkill',
    summary: 'A skill with all its versions (archived ones too)',
    scope: 'read',
    ok: { 200: ref('Skill') },
  }),
  r({
    method: 'get',
    path: '/skills/{id}/versions/{version}',
    id: 'getSkillVersion',
    summary: "A version's content",
    scope: 'read',
    ok: {
      200: {
        ...obj({
          name: { type: 'string' },
          version: { type: 'integer' },
          description: { type: 'string' },
          size: { type: 'integer' },
          sha256: { type: 'string' },
          created_by: { type: 'string' },
          created_at: ts,
          links: obj({ content: { type: 'string' } }),
          content: { type: 'string' },
        }),
      },
    },
  }),
  r({
    method: 'delete',
    path: '/skills/{id}',
    id: 'deleteSkill',
    summary:
      'Archive a skill: runs already started keep it, later runs of agents listing it fail their model steps, saying so; uploading it again brings it back',
    scope: 'manage',
    ok: { 204: null },
  }),
  r({
    method: 'get',
    path: '/runs/{id}/skill-context',
    id: 'getRunSkillContext',
    summary: "The skills each item's model steps had in their context, with versions (?item=<seq>)",
    scope: 'read',
    ok: {
      200: obj({
        data: {
          type: 'array',
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            skills: { type: 'array', items: ref('SkillUsed') },
            at: ts,
          }),
        },
        skills: {
          type: 'array',
          description: 'Each skill (and version) the run used, with how many model steps loaded it.',
          items: obj({
            name: { type: 'string' },
            kind: { enum: ['user', 'platform'] },
            version: nullable({ type: 'integer' }),
            steps: { type: 'integer' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/runs/{id}/source-context',
    id: 'getRunSourceContext',
    summary: "What each item's retrieval found, and the citations of its answer that were kept (?item=<seq>)",
    scope: 'read',
    ok: {
      200: obj({
        data: {
          type: 'array',
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            query: { type: 'string' },
            passages: { type: 'array', items: ref('Passage') },
            at: ts,
          }),
        },
        citations: {
          type: 'array',
          description:
            "Passages the model cited in an item's answer that the item had retrieved; a citation of anything else is dropped from the answer and logged on the run.",
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            passage_id: { type: 'string' },
            source: { type: 'string' },
            version: { type: 'integer' },
            page: nullable({ type: 'integer' }),
            paragraph: { type: 'integer' },
            citation_url: { type: 'string' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
    errors: [400],
  }),
  r({
    method: 'get',
    path: '/wizard/starters',
    id: 'listWizardStarters',
    summary:
      'What the creation wizard can start from without generating: a blank agent and the shipped examples, and whether a model is configured',
    scope: 'read',
    ok: {
      200: obj({
        model: obj({ available: { type: 'boolean' }, reason: nullable({ type: 'string' }) }),
        starters: {
          type: 'array',
          items: obj({
            id: { type: 'string' },
            name: { type: 'string' },
            description: { type: 'string' },
            needs_model: { type: 'boolean' },
          }),
        },
      }),
    },
  }),
  r({
    method: 'post',
    path: '/wizard/sessions',
    id: 'startWizard',
    summary: 'Start creating an agent with the wizard: the goal, and files for context (each becomes a source)',
    scope: 'manage',
    bodyContent: {
      'application/json': { schema: jsonSchema(bodies.startWizard) },
      'multipart/form-data': {
        schema: {
          type: 'object',
          properties: {
            goal: (jsonSchema(bodies.startWizard).properties as Record<string, unknown>).goal,
            files: { type: 'array', items: { type: 'string', format: 'binary' }, maxItems: 20 },
          },
          required: ['goal'],
        },
      },
    },
    ok: { 201: ref('WizardSession') },
  }),
  r({
    method: 'get',
    path: '/wizard/sessions/{id}',
    id: 'getWizardSession',
    summary: 'A wizard session: what it has gathered and generated, its conversation with the model and its cost',
    scope: 'read',
    ok: { 200: ref('WizardSession') },
  }),
  r({
    method: 'post',
    path: '/wizard/sessions/{id}/questions',
    id: 'generateWizardQuestions',
    summary: 'Generate clarifying questions from the goal (409 without a model)',
    scope: 'manage',
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  }),
  r({
    method: 'post',
    path: '/wizard/sessions/{id}/answers',
    id: 'answerWizardQuestions',
    summary:
      "Answer the questions (in their order); generates the instructions' six parts and the integrations they need",
    scope: 'manage',
    body: jsonSchema(bodies.answerWizard),
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  }),
  r({
    method: 'put',
    path: '/wizard/sessions/{id}/instructions',
    id: 'editWizardInstructions',
    summary: 'Save the instructions as edited (and the integrations, when given)',
    scope: 'manage',
    body: jsonSchema(bodies.editWizardInstructions),
    ok: { 200: ref('WizardSession') },
    errors: [409],
  }),
  r({
    method: 'post',
    path: '/wizard/sessions/{id}/workflow',
    id: 'buildWizardWorkflow',
    summary:
      'Generate the workflow graph, validated as the agents API validates (one corrective retry; 422 when still invalid), or take a starter',
    scope: 'manage',
    body: jsonSchema(bodies.buildWizardWorkflow),
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  }),
  r({
    method: 'post',
    path: '/wizard/sessions/{id}/agent',
    id: 'createWizardAgent',
    summary: 'Create the Draft agent from the session; a successful test run then lets it go Ready',
    scope: 'manage',
    ok: { 201: ref('Agent') },
    errors: [409, 422],
  }),
  r({
    method: 'get',
    path: '/agents/{id}/creation-history',
    id: 'getAgentCreationHistory',
    summary: 'The wizard session that created the agent: goal, answers, generated steps and the conversation',
    scope: 'read',
    ok: { 200: ref('WizardSession') },
  }),
  r({
    method: 'get',
    path: '/chat/conversations',
    id: 'listConversations',
    summary:
      "Chat Mode: the caller's conversations, most recently active first (?limit=&cursor=), and whether a model is configured",
    scope: 'read',
    ok: {
      200: obj({
        data: { type: 'array', items: ref('Conversation') },
        next_cursor: nullable({ type: 'string' }),
        model: ref('ChatModel'),
      }),
    },
  }),
  r({
    method: 'post',
    path: '/chat/conversations',
    id: 'createConversation',
    summary:
      'Chat Mode: begin a conversation, optionally about one agent. 503 model_not_configured when no model is configured (it could never be answered).',
    scope: 'read',
    body: jsonSchema(bodies.createConversation),
    ok: { 201: { allOf: [ref('Conversation'), obj({ messages: { type: 'array', maxItems: 0 } })] } },
    errors: [503],
  }),
  r({
    method: 'get',
    path: '/chat/conversations/{id}',
    id: 'getConversation',
    summary: 'Chat Mode: a conversation with its messages, their tool calls, linked runs and usage',
    scope: 'read',
    ok: {
      200: {
        allOf: [
          ref('Conversation'),
          obj({ messages: { type: 'array', items: ref('ChatMessage') }, model: ref('ChatModel') }),
        ],
      },
    },
  }),
  r({
    method: 'post',
    path: '/chat/conversations/{id}/messages',
    id: 'askChat',
    summary:
      'Chat Mode: ask the assistant; the answer streams as server-sent events. It can read and run agents and decide approvals (each by your role), never change configuration. 503 when no model is configured.',
    scope: 'read',
    body: jsonSchema(bodies.askChat),
    ok: {
      200: sse(
        'Server-sent events: `text` pieces as they stream, `tool_call` and `tool_result`, then `message` (or `error`)',
        {
          text: obj({ text: { type: 'string' } }),
          tool_call: obj({ id: { type: 'string' }, name: { type: 'string' }, input: {} }),
          tool_result: obj({
            id: { type: 'string' },
            name: { type: 'string' },
            is_error: { type: 'boolean' },
            run_ids: { type: 'array', items: { type: 'string' } },
          }),
          message: obj({ conversation: ref('Conversation'), question: ref('ChatMessage'), answer: ref('ChatMessage') }),
          error: obj({ status: { type: 'integer' }, code: { type: 'string' }, detail: { type: 'string' } }),
        },
      ),
    },
    errors: [503],
  }),
];

/** Problems every authenticated route can answer, besides its own (429: a key over CADRE_API_RATE_LIMIT). */
const authProblems = [401, 403, 404, 429];
/** Problems of any route that reads a body: not JSON (400), over the size limit (413), another media type (415). */
const bodyProblems = [400, 413, 415, 422];
/** Problems any request can meet: headers (the URL with its query included) over 16 kB (431), a fault (500). */
const everyRouteProblems = [431, 500];

/**
 * The rule every request is held to before its own schema (api/validation.ts), said in each request schema so the
 * document calls nothing valid that it refuses: no U+0000 and no lone surrogate in any text or object key. A
 * string's own pattern that lets them through (`\S`, not blank) gets the rule beside it; an enum says it already,
 * and a binary part (a file) is bytes, not text.
 */
const storableText = '^[^\\u0000\\uD800-\\uDFFF]*$';
const subschemaLists = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const subschemaMaps = new Set(['properties', 'patternProperties', '$defs']);
const subschemas = new Set(['items', 'additionalProperties', 'not', 'contains']);
function withTextRule(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (subschemaLists.has(k) && Array.isArray(v)) out[k] = v.map(withTextRule);
    else if (subschemaMaps.has(k) && typeof v === 'object' && v !== null)
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, withTextRule(sub)]));
    else if (subschemas.has(k)) out[k] = withTextRule(v);
    else out[k] = v;
  }
  const types = [out.type].flat();
  if (types.includes('string') && out.format !== 'binary' && !out.enum && out.const === undefined) {
    if (out.pattern === undefined) out.pattern = storableText;
    else if (['\u0000', 'a\u0000', '\ud800', 'a\ud800'].some((t) => new RegExp(String(out.pattern), 'u').test(t)))
      out.allOf = [...((out.allOf as unknown[]) ?? []), { pattern: storableText }];
  }
  // Keys are text too: a record's own rule for them keeps, with this one.
  if (types.includes('object')) out.propertyNames = withTextRule({ type: 'string', ...(out.propertyNames as object) });
  return out;
}

/** Keys carry scopes (an admin route takes a manage key); people bring their session cookie and role. */
function securityOf(scope: Scope) {
  if (scope === 'public') return [];
  if (scope === 'session') return [{ session: [] }];
  if (scope === 'owner') return [{ session: [] }];
  return [{ bearer: [scope === 'admin' ? 'manage' : scope] }, { session: [] }];
}

function response(schema: unknown) {
  if (schema === null) return { description: 'No content' };
  if (schema === 'file')
    return {
      description: 'The file',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  if (typeof schema === 'object' && schema !== null && 'sse' in schema) {
    const { description, events } = (schema as ReturnType<typeof sse>).sse;
    return {
      description,
      content: {
        'text/event-stream': {
          schema: { type: 'string' },
          // OpenAPI 3.1 has no keyword for event streams: each event's data is described as an extension.
          'x-events': events,
        },
      },
    };
  }
  if (schema === 'events')
    return {
      description: 'Server-sent events (`progress`, then `end`)',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    };
  return { description: 'OK', content: { 'application/json': { schema } } };
}

export function openApiDocument(publicUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const problems = new Set([
      ...(route.scope === 'public' ? [] : authProblems),
      ...(route.body || route.bodyContent ? bodyProblems : []),
      ...(route.id in queries ? [400] : []), // a query parameter it cannot use
      ...(route.id in queries || route.path.includes('{') ? [422] : []), // a parameter holding U+0000 (validation.ts)
      ...(route.errors ?? []),
      ...everyRouteProblems,
    ]);
    const params = [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
      ...(route.id in queries ? queryParameters(queries[route.id as keyof typeof queries]) : []),
    ].map((p) => ({ ...p, schema: withTextRule(p.schema) }));
    const content = route.bodyContent ?? { 'application/json': { schema: route.body } };
    paths[route.path] ??= {};
    paths[route.path][route.method] = {
      operationId: route.id,
      summary: route.summary,
      security: securityOf(route.scope),
      ...(params.length ? { parameters: params } : {}),
      ...(route.body || route.bodyContent
        ? {
            requestBody: {
              required: true,
              content: Object.fromEntries(
                Object.entries(content).map(([media, c]) => [media, { ...c, schema: withTextRule(c.schema) }]),
              ),
            },
          }
        : {}),
      responses: {
        ...Object.fromEntries(Object.entries(route.ok).map(([status, schema]) => [status, response(schema)])),
        ...Object.fromEntries(
          [...problems]
            .sort()
            .map((status) => [
              String(status),
              { description: 'Problem', content: { 'application/problem+json': { schema: ref('Problem') } } },
            ]),
        ),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cadre API',
      version: '1',
      description:
        'Agents, runs, approvals, triggers, files, sources, skills and members of a workspace. Authenticate with `Authorization: Bearer <API_KEY>` or a console session; errors are `application/problem+json`.',
    },
    servers: [{ url: `${publicUrl}/v1` }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'A workspace API key. Scopes: run (start runs, decide approvals), read, manage (implies read).',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'cadre_session',
          description:
            'A console session (POST /v1/auth/login). Roles: viewer (read), operator (+ run, decide approvals), editor (+ change agents), admin (+ members, invitations, API keys, audit log), owner. Changes need the X-CSRF-Token header.',
        },
      },
      schemas,
    },
    paths,
  };
}
