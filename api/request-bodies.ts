// The JSON bodies the account, member, key, connection, skill, single sign-on and state-store routes accept: one zod
// schema each, which the route validates with and the OpenAPI document is generated from (api/openapi.ts), so the
// two cannot disagree.
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
/** A password given to prove who you are (any length it was set with). */
const passwordGiven = z.string().min(1).max(200);
const totpCode = z
  .string()
  .trim()
  .regex(/^\d{6}$/, 'six digits from your authenticator app');

export const bodies = {
  signUp: z.object({
    email,
    password,
    name: z.string().trim().max(100).optional(),
    workspace_name: z.string().trim().min(1).max(100).optional(),
  }),
  signIn: z.object({
    email,
    password: passwordGiven,
    totp_code: totpCode.optional(),
    recovery_code: z.string().trim().min(1).max(40).optional(),
  }),
  requestPasswordReset: z.object({ email }),
  confirmPasswordReset: z.object({ token: z.string().min(1).max(200), password }),
  switchWorkspace: z.object({ workspace_id: z.uuid() }),
  createWorkspace: z.object({ name: z.string().trim().min(1).max(100) }),
  changePassword: z.object({ current_password: passwordGiven, new_password: password }),
  passwordOnly: z.object({ password: passwordGiven }),
  recoverAccount: z.object({ email, password: passwordGiven }),
  totpCode: z.object({ code: totpCode }),
  acceptInvitation: z.object({ email, password: passwordGiven, name: z.string().trim().max(100).optional() }),
  changeRole: z.object({ role: z.enum(roles) }),
  createInvitation: z.object({ role: z.enum(roles), email: email.toLowerCase().optional() }),
  changePlan: z.object({ plan: z.enum(plans) }),
  createApiKey: z.object({ name: z.string().min(1).max(100), scopes: z.array(z.enum(scopes)).min(1) }),
  decideReview: z.object({
    action: z.enum(reviewActions),
    output: z.record(z.string(), z.unknown()).optional(),
    reason: z.string().trim().min(1).max(2000).optional(),
    node_id: z.string().min(1).max(100).optional(),
  }),
  createConnection: createConnectionSchema,
  updateConnection: updateConnectionSchema,
  uploadSkill: z.object({
    name: skillName.describe('A name that exists adds a version to that skill.'),
    description: z.string().trim().max(2000).default('').describe('What the skill is for, shown with it.'),
    content: z
      .string()
      .refine((c) => c.trim() !== '', 'a skill cannot be empty: send its instructions as Markdown or text in "content"')
      .describe(`The instructions, as Markdown or plain text: at most ${maxSkillBytes / 1000} kB (UTF-8), or 413.`),
  }),
  createRunLink: z.object({ name: z.string().trim().min(1).max(200).default('Run Mode link') }),
  putState: z.object({
    value: z.unknown(),
    // The write stores expected_version + 1 in an int4 column: one less than its largest value.
    expected_version: z.number().int().min(0).max(2_147_483_646).optional(),
  }),
  startWizard: z.object({
    goal: z
      .string()
      .trim()
      .min(1, 'describe what the agent should do')
      .max(10_000, 'describe the goal in at most 10,000 characters; upload longer material as files'),
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
    title: z.string().trim().min(1).max(200).optional(),
  }),
  askChat: z.object({
    text: z.string().trim().min(1, 'ask something').max(8000).describe("The person's question or request."),
  }),
  configureSso: z.object({
    issuer: z.url(),
    client_id: z.string().min(1).max(300),
    client_secret: z.string().min(1).max(1000),
    email_domain: z
      .string()
      .trim()
      .toLowerCase()
      .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'a domain such as example.com')
      .optional(),
    default_role: z.enum(roles).exclude(['owner']).default('viewer'),
  }),
};
