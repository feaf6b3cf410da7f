// The agent creation wizard (spec §1.11): goal (and files) → clarifying questions → instructions in six parts →
// the integrations they need → a validated workflow graph → a Draft agent, which a successful test run (the
// agents API's test-run route) lets go Ready (its state route). Each step is a small route over one wizard
// session; generation calls the model from the web process (services/wizard/model-client.ts says why).
import { Router, type Request } from 'express';
import { jsonSchema, nullable, obj, ref, type Route } from '../openapi-schemas';
import { addVersion } from '../../db/sources';
import { getAgent } from '../../db/agents';
import {
  createWizardSession,
  getWizardSession,
  updateWizardSession,
  wizardSessionOfAgent,
  type WizardFile,
  type WizardSessionRow,
} from '../../db/wizard-sessions';
import { renderInstructions } from '../../model/wizard';
import { requirePermission } from '../auth';
import { createAgentWithinPlan } from '../agent-creation';
import { agentNameWarnings } from '../agent-name-warnings';
import { checkAgentCalls } from '../agent-validation';
import { ApiError } from '../problem';
import { bodies } from '../request-bodies';
import { agentJson } from '../serialize';
import { startSourceIndexing } from '../source-indexing';
import { readUpload } from '../source-upload';
import { jsonBody, param, parseBody, readJson } from '../validation';
import { generateInstructions, generateQuestions, generateWorkflow } from '../../services/wizard/generation';
import { addUsage, noModelMessage, requireModel, type ModelSettings } from '../../services/wizard/model-client';
import { listStarters, starterSampleInput, starterSpec } from '../../services/wizard/starters';
import type { RouteDeps } from './agents';

export interface WizardDeps extends RouteDeps {
  /** The model settings (cadre.config.ts); no key → the wizard offers examples and a blank agent instead. */
  model?: ModelSettings;
}

const textFormats = new Set(['txt', 'csv', 'json', 'xml', 'md', 'html']);
const excerptChars = 4_000;

export function wizardRoutes(deps: WizardDeps): Router {
  const { knex } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);
  const modelAvailable = Boolean(deps.model?.apiKey);

  const sessionJson = (s: WizardSessionRow) => ({
    id: s.id,
    goal: s.goal,
    files: s.files.map(({ name, format, size, source }) => ({ name, format, size, source })),
    questions: s.questions,
    instructions: s.instructions,
    connections: s.connections,
    spec: s.spec,
    sample_input: s.sample_input,
    attempts: s.attempts,
    conversation: s.conversation,
    usage: s.usage,
    agent_id: s.agent_id,
    created_by: s.created_by,
    created_at: s.created_at,
    updated_at: s.updated_at,
    model: { available: modelAvailable, reason: modelAvailable ? null : noModelMessage },
  });

  const loadSession = async (req: Request) => {
    const session = await getWizardSession(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!session)
      throw new ApiError(404, 'wizard_session_not_found', `no wizard session ${param(req, 'id')} in this workspace`);
    return session;
  };
  /** A session whose agent exists is history: its steps are not generated again. */
  const openSession = async (req: Request) => {
    const session = await loadSession(req);
    if (session.agent_id)
      throw new ApiError(
        409,
        'wizard_session_done',
        'this wizard session has created its agent already; edit the agent in Operator Mode',
      );
    return session;
  };

  r.get('/wizard/starters', requirePermission('read'), (_req, res) => {
    res.json({
      model: { available: modelAvailable, reason: modelAvailable ? null : noModelMessage },
      starters: listStarters(),
    });
  });

  // The goal as JSON {goal}, or as multipart/form-data with a "goal" field and files, each of which becomes a
  // source of its name (indexed like any upload) that the generated agent lists.
  r.post('/wizard/sessions', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace;
    let goalBody: unknown;
    const files: WizardFile[] = [];
    if (req.is('multipart/form-data')) {
      const upload = await readUpload(req);
      goalBody = { goal: upload.fields.goal ?? '' };
      parseBody(bodies.startWizard, goalBody); // nothing is stored for a session that cannot start
      for (const f of upload.files) {
        const { version } = await addVersion(knex, ws.id, {
          name: f.fileName,
          kind: 'files',
          documents: [{ fileName: f.fileName, format: f.format, contentType: f.contentType, content: f.content }],
          createdBy: req.auth!.actor,
        });
        await startSourceIndexing(deps, version);
        files.push({
          name: f.fileName,
          format: f.format,
          size: f.content.length,
          source: f.fileName,
          excerpt: textFormats.has(f.format) ? f.content.toString('utf8').slice(0, excerptChars) : undefined,
        });
      }
    } else if (req.is('application/json')) {
      goalBody = await readJson(req, res, deps.bodyLimit);
    } else {
      throw new ApiError(
        415,
        'unsupported_media_type',
        'send {"goal": "…"} as application/json, or the goal and files as multipart/form-data',
      );
    }
    const { goal } = parseBody(bodies.startWizard, goalBody);
    const session = await createWizardSession(knex, { workspace_id: ws.id, created_by: req.auth!.actor, goal, files });
    res.status(201).location(`/v1/wizard/sessions/${session.id}`).json(sessionJson(session));
  });

  r.get('/wizard/sessions/:id', requirePermission('read'), async (req, res) => {
    res.json(sessionJson(await loadSession(req)));
  });

  r.post('/wizard/sessions/:id/questions', requirePermission('manage'), async (req, res) => {
    const session = await openSession(req);
    const model = requireModel(deps.model);
    const { value, conversation, usage } = await generateQuestions(model, session);
    const updated = await updateWizardSession(knex, session, {
      questions: value.map((q) => ({ question: q.question, why: q.why })),
      conversation: [...session.conversation, ...conversation],
      usage: addUsage(session.usage, usage),
    });
    res.json(sessionJson(updated));
  });

  r.post('/wizard/sessions/:id/answers', requirePermission('manage'), ...body, async (req, res) => {
    const session = await openSession(req);
    const { answers } = parseBody(bodies.answerWizard, req.body);
    if (answers.length > session.questions.length)
      throw new ApiError(
        422,
        'too_many_answers',
        `the session has ${session.questions.length} questions and ${answers.length} answers were sent`,
      );
    const model = requireModel(deps.model);
    const answered = { ...session, questions: session.questions.map((q, i) => ({ ...q, answer: answers[i] ?? '' })) };
    const { value, conversation, usage } = await generateInstructions(model, answered);
    const updated = await updateWizardSession(knex, session, {
      questions: answered.questions,
      instructions: value.instructions,
      connections: value.connections,
      conversation: [...session.conversation, ...conversation],
      usage: addUsage(session.usage, usage),
    });
    res.json(sessionJson(updated));
  });

  r.put('/wizard/sessions/:id/instructions', requirePermission('manage'), ...body, async (req, res) => {
    const session = await openSession(req);
    const edited = parseBody(bodies.editWizardInstructions, req.body);
    const updated = await updateWizardSession(knex, session, {
      instructions: edited.instructions,
      ...(edited.connections ? { connections: edited.connections } : {}),
    });
    res.json(sessionJson(updated));
  });

  r.post('/wizard/sessions/:id/workflow', requirePermission('manage'), ...body, async (req, res) => {
    const session = await openSession(req);
    const { starter } = parseBody(bodies.buildWizardWorkflow, req.body);
    const sources = session.files.map((f) => f.source);
    if (starter) {
      const spec = starterSpec(starter, nameFromGoal(session.goal));
      const withWizard = {
        ...spec,
        instructions: session.instructions ? renderInstructions(session.instructions) : spec.instructions,
        sources: [...new Set([...spec.sources, ...sources])],
      };
      const updated = await updateWizardSession(knex, session, {
        spec: withWizard,
        sample_input: starterSampleInput(spec),
      });
      return res.json(sessionJson(updated));
    }
    const model = requireModel(deps.model);
    if (!session.instructions)
      throw new ApiError(
        409,
        'wizard_no_instructions',
        'answer the questions (or write the instructions) before building the workflow',
      );
    const { value, conversation, usage } = await generateWorkflow(model, {
      ...session,
      instructions: session.instructions,
    });
    const updated = await updateWizardSession(knex, session, {
      spec: value.spec
        ? {
            ...value.spec,
            instructions: renderInstructions(session.instructions),
            sources: [...new Set([...value.spec.sources, ...sources])],
          }
        : session.spec,
      sample_input: value.spec ? value.sampleInput : session.sample_input,
      attempts: [...session.attempts, ...value.attempts],
      conversation: [...session.conversation, ...conversation],
      usage: addUsage(session.usage, usage),
    });
    if (!value.spec) {
      const problems = value.attempts.at(-1)!.problems;
      throw new ApiError(
        422,
        'generated_workflow_invalid',
        `the model's workflow did not validate, even after it was told why: ${problems.join('; ')}. Build it again, or start from an example or a blank agent`,
        {},
        { errors: problems.map((message) => ({ message })) },
      );
    }
    res.json(sessionJson(updated));
  });

  r.post('/wizard/sessions/:id/agent', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace;
    const session = await openSession(req);
    if (!session.spec)
      throw new ApiError(
        409,
        'wizard_no_workflow',
        'build the workflow (or choose a starter) before creating the agent',
      );
    await checkAgentCalls(knex, ws.id, session.spec);
    const warnings = await agentNameWarnings(knex, ws.id, session.spec.name);
    const agent = await createAgentWithinPlan(knex, ws, session.spec, req.auth!.actor, ' with the creation wizard');
    await updateWizardSession(knex, session, { agent_id: agent.id });
    res
      .status(201)
      .location(`/v1/agents/${agent.id}`)
      .json(agentJson(agent, { spec: session.spec, warnings }));
  });

  // The conversation that created an agent, kept with it.
  r.get('/agents/:id/creation-history', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const agent = await getAgent(knex, ws, param(req, 'id'));
    if (!agent) throw new ApiError(404, 'agent_not_found', `no agent ${param(req, 'id')} in this workspace`);
    const session = await wizardSessionOfAgent(knex, ws, agent.id);
    if (!session) throw new ApiError(404, 'no_creation_history', `agent ${agent.name} was not created with the wizard`);
    res.json(sessionJson(session));
  });

  return r;
}

/** An agent's name from its goal: the goal's first line, short enough for a name. */
function nameFromGoal(goal: string): string {
  const line = goal.split('\n')[0].trim();
  return line.length <= 80 ? line : `${line.slice(0, 77)}…`;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const wizardRouteDocs: Route[] = [
  {
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
  },
  {
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
  },
  {
    method: 'get',
    path: '/wizard/sessions/{id}',
    id: 'getWizardSession',
    summary: 'A wizard session: what it has gathered and generated, its conversation with the model and its cost',
    scope: 'read',
    ok: { 200: ref('WizardSession') },
  },
  {
    method: 'post',
    path: '/wizard/sessions/{id}/questions',
    id: 'generateWizardQuestions',
    summary: 'Generate clarifying questions from the goal (409 without a model)',
    scope: 'manage',
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  },
  {
    method: 'post',
    path: '/wizard/sessions/{id}/answers',
    id: 'answerWizardQuestions',
    summary:
      "Answer the questions (in their order); generates the instructions' six parts and the integrations they need",
    scope: 'manage',
    body: jsonSchema(bodies.answerWizard),
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  },
  {
    method: 'put',
    path: '/wizard/sessions/{id}/instructions',
    id: 'editWizardInstructions',
    summary: 'Save the instructions as edited (and the integrations, when given)',
    scope: 'manage',
    body: jsonSchema(bodies.editWizardInstructions),
    ok: { 200: ref('WizardSession') },
    errors: [409],
  },
  {
    method: 'post',
    path: '/wizard/sessions/{id}/workflow',
    id: 'buildWizardWorkflow',
    summary:
      'Generate the workflow graph, validated as the agents API validates (one corrective retry; 422 when still invalid), or take a starter',
    scope: 'manage',
    body: jsonSchema(bodies.buildWizardWorkflow),
    ok: { 200: ref('WizardSession') },
    errors: [409, 502],
  },
  {
    method: 'post',
    path: '/wizard/sessions/{id}/agent',
    id: 'createWizardAgent',
    summary: 'Create the Draft agent from the session; a successful test run then lets it go Ready',
    scope: 'manage',
    ok: { 201: ref('Agent') },
    errors: [409, 422],
  },
  {
    method: 'get',
    path: '/agents/{id}/creation-history',
    id: 'getAgentCreationHistory',
    summary: 'The wizard session that created the agent: goal, answers, generated steps and the conversation',
    scope: 'read',
    ok: { 200: ref('WizardSession') },
  },
];
