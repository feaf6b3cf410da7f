// The JSON bodies the account, member, key, connection, skill, source, run, approval, single sign-on and state-store
// routes accept: one zod schema each, which the route validates with and the OpenAPI document is generated from
// (api/openapi.ts), so the two cannot disagree. Only what JSON Schema can say is used where it matters: a limit is
// checked on the text as sent (before a trim), and "not blank" is a pattern, so the document refuses what the
// route refuses (test/integration/api-fuzz.test.ts sends requests generated from the document to hold them to it).
import { z } from 'zod';
import { minPasswordLength } from '../db/accounts';
import { scopes } from '../db/api-keys';
import { roles } from '../db/roles';
import { plans } from '../model/plan';
import { reviewActions } from '../model/review';
import { createConnectionSchema, updateConnectionSchema } from '../model/connection';
import { maxSkillBytes, skillName } from '../model/skill';
import { instructionPartsSchema, proposedConnectionSchema } from '../model/wizard';

export const email = z.string().trim().email().max(254);
export const password = z
  .string()
  .min(minPasswordLength, `use at least ${minPasswordLength} characters`)
  .max(200, 'use at most 200 characters');
/**
 * Text that must say something: at most `max` characters as sent, trimmed, and not blank (a pattern, which the
 * OpenAPI document carries; a trim and a minimum length after it it cannot).
 */
export const someText = (max: number, blank = 'must not be blank') => z.string().max(max).trim().regex(/\S/, blank);
/** Text that may be empty: at most `max` characters as sent, then trimmed. */
const anyText = (max: number) => z.string().max(max).trim();
/** A password given to prove who you are (any length it was set with). */
const passwordGiven = z.string().min(1).max(200);
const totpCode = z
  .string()
  .trim()
  .regex(/^\d{6}$/, 'six digits from your authenticator app');

/** An item of a run, as the API numbers them (`seq`, from 0). */
const itemNumber = z
  .number({ error: 'an item number is a whole number from 0' })
  .int('an item number is a whole number from 0')
  .min(0, 'an item number is a whole number from 0')
  .max(2_147_483_647);

/** A source's name: given with an upload (a form field) or a URL; a name that exists adds a version. */
export const sourceName = z
  .string()
  .max(200, 'a source name has at most 200 characters')
  .trim()
  .regex(/\S/, 'a source name cannot be empty');

export const bodies = {
  signUp: z.object({
    email,
    password,
    name: anyText(100).optional(),
    workspace_name: someText(100).optional(),
  }),
  signIn: z.object({
    email,
    password: passwordGiven,
    totp_code: totpCode.optional(),
    recovery_code: someText(40).optional(),
  }),
  requestPasswordReset: z.object({ email }),
  confirmPasswordReset: z.object({ token: z.string().min(1).max(200), password }),
  switchWorkspace: z.object({ workspace_id: z.uuid() }),
  createWorkspace: z.object({ name: someText(100) }),
  changePassword: z.object({ current_password: passwordGiven, new_password: password }),
  passwordOnly: z.object({ password: passwordGiven }),
  recoverAccount: z.object({ email, password: passwordGiven }),
  totpCode: z.object({ code: totpCode }),
  acceptInvitation: z.object({
    email,
    password: passwordGiven.describe(
      `An existing account's password, or the new account's (at least ${minPasswordLength} characters).`,
    ),
    name: anyText(100).optional(),
  }),
  changeRole: z.object({ role: z.enum(roles) }),
  createInvitation: z.object({ role: z.enum(roles), email: email.toLowerCase().optional() }),
  changePlan: z.object({ plan: z.enum(plans) }),
  setAgentState: z.object({ state: z.enum(['draft', 'ready', 'live', 'paused']) }),
  /** A run's start (the API's, the console's, a test run's, Run Mode's). */
  runAgent: z.object(
    {
      input: z
        .string({ error: '"input" must be a string (the data the run receives)' })
        .describe('The data the run receives, split into items.'),
    },
    { error: 'the body must be a JSON object {"input": "..."}' },
  ),
  /** A retry of a run's failed items (services/runs/retry.ts). */
  retryRun: z.object(
    {
      items: z
        .union([z.literal('failed'), z.array(itemNumber).min(1, 'name at least one item').max(10_000)])
        .describe('"failed" for every failed item not yet retried, or the numbers (`seq`) of failed items.'),
      version: z
        .enum(['same', 'current'])
        .optional()
        .describe("`current`: retry on the agent's current version; by default the version the run used."),
    },
    { error: 'the body must be a JSON object {"items": "failed"} or {"items": [item numbers]}' },
  ),
  /** A test of a version on past items (services/runs/test-run.ts). */
  startTestRun: z.object(
    {
      version: z.number().int().min(1).max(2_147_483_647).describe('The agent version to test.'),
      from_run: z.uuid('from_run must be the id of a run of this agent').optional(),
      items: z
        .array(itemNumber)
        .min(1)
        .max(5_000)
        .optional()
        .describe('Item numbers (`seq`) of `from_run`; all of its items when left out.'),
      last: z
        .number()
        .int()
        .min(1)
        .max(5_000)
        .optional()
        .describe("Without from_run: the agent's last K settled items (default 20)."),
    },
    { error: 'the body must be a JSON object {"version": N, "from_run": "<run id>", "items": [...]}' },
  ),
  decideApproval: z.object({
    decision: z.enum(['approve', 'reject', 'approve_with_edits']),
    arguments: z.record(z.string(), z.unknown()).optional().describe('The edited arguments (approve_with_edits).'),
    comment: z.string().max(2000).optional().describe("The reviewer's comment."),
  }),
  /** A source from a web page or an API endpoint (uploads are multipart/form-data instead). */
  addSourceUrl: z.object({
    url: z
      .url({ protocol: /^https?$/, error: 'url must be an http or https URL' })
      .meta({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?:' }), // the protocol check, for the document
    name: sourceName.optional(),
    auth_header: z
      .string()
      .min(1)
      .max(4000)
      .optional()
      .describe("For an API endpoint: the Authorization header's value, stored sealed, sent only to that origin."),
  }),
  searchSources: z.object({
    query: z.string().min(1),
    sources: z.array(z.string()).optional(),
    top_k: z.number().int().min(1).max(50).default(5),
  }),
  createApiKey: z.object({
    name: z.string().min(1).max(100),
    scopes: z.array(z.enum(scopes)).min(1),
    expires_at: z.iso
      .datetime({ offset: true })
      .refine((at) => Date.parse(at) > Date.now(), 'must be in the future')
      .optional()
      .describe('When the key stops working on its own (ISO 8601); without it, it lasts until revoked.'),
  }),
  decideReview: z.object({
    action: z.enum(reviewActions),
    output: z.record(z.string(), z.unknown()).optional(),
    reason: someText(2000).optional(),
    node_id: z.string().min(1).max(100).optional(),
  }),
  createConnection: createConnectionSchema,
  updateConnection: updateConnectionSchema,
  uploadSkill: z.object({
    name: skillName.describe('A name that exists adds a version to that skill.'),
    description: anyText(2000).default('').describe('What the skill is for, shown with it.'),
    content: z
      .string()
      .regex(/\S/, 'a skill cannot be empty: send its instructions as Markdown or text in "content"')
      .describe(`The instructions, as Markdown or plain text: at most ${maxSkillBytes / 1000} kB (UTF-8), or 413.`),
  }),
  createRunLink: z.object({ name: someText(200).default('Run Mode link') }),
  putState: z.object({
    value: z.unknown(),
    // The write stores expected_version + 1 in an int4 column: one less than its largest value.
    expected_version: z.number().int().min(0).max(2_147_483_646).optional(),
  }),
  startWizard: z.object({
    goal: z
      .string()
      .max(10_000, 'describe the goal in at most 10,000 characters; upload longer material as files')
      .trim()
      .regex(/\S/, 'describe what the agent should do'),
  }),
  /** The answers, in the order of the session's questions (an empty string leaves one unanswered). */
  answerWizard: z.object({ answers: z.array(z.string().max(5_000)).max(8) }),
  editWizardInstructions: z.object({
    instructions: instructionPartsSchema,
    connections: z.array(proposedConnectionSchema).max(10).optional(),
  }),
  /** `starter`: build from an example or "blank" (GET /v1/wizard/starters) instead of generating the graph. */
  buildWizardWorkflow: z.object({ starter: z.string().min(1).max(100).optional() }),
  createConversation: z.object({
    agent_id: z.uuid().optional().describe('The agent the conversation is about ("Ask about this agent").'),
    title: someText(200).optional(),
  }),
  askChat: z.object({
    text: someText(8000, 'ask something').describe("The person's question or request."),
  }),
  configureSso: z.object({
    issuer: z.url(),
    client_id: z.string().min(1).max(300),
    client_secret: z.string().min(1).max(1000),
    email_domain: z
      .string()
      .regex(/^[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/, 'a domain such as example.com')
      .toLowerCase()
      .optional(),
    default_role: z.enum(roles).exclude(['owner']).default('viewer'),
  }),
};
