// model/ (DESIGN.md "Top-level layout"): pure zod schemas and types of agents, nodes, policy, triggers, plans,
// connections and tools; the node-graph interpreter (interpreter.ts: conditions, templates, next node); prices; an
// OpenAPI document's operations (openapi-document.ts), a connection's tools (connection-tools.ts).
// Importable by every layer, the workflow sandbox and the console included, it imports none of them and no Node
// built-in (test/unit/layering.test.ts holds both rules).
//
// The agent model: zod schemas of an agent spec (instructions, node graph, policy). Pure, so the workflow
// sandbox, the activities and the API all import it.
import { z } from 'zod';
import { connectionName } from './connection';
import { parseSkillRef, skillRef } from './skill';

const nodeId = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'node ids are lower-case letters, digits, "-" or "_", starting with a letter');
const next = nodeId.nullable().optional();

/** A condition over item (or event) data, without code. `field` is a dot path such as `invoice.amount`. */
export const conditionSchema = z.object({
  field: z.string().min(1),
  op: z.enum(['equals', 'not_equals', 'contains', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists']),
  value: z.unknown().optional(),
});
export const conditionsSchema = z.union([
  conditionSchema,
  z.object({ all: z.array(conditionSchema).min(1) }),
  z.object({ any: z.array(conditionSchema).min(1) }),
]);

const inputNode = z.object({
  kind: z.literal('input'),
  id: nodeId,
  /** How the run's input string becomes items. `auto` picks JSON, then CSV/TSV, then one item per line. */
  format: z.enum(['auto', 'json', 'csv', 'tsv', 'lines', 'files']).default('auto'),
  next,
});
const transformNode = z.object({
  kind: z.literal('transform'),
  id: nodeId,
  /** New or replaced fields; values are templates such as "{{first}} {{last}}" or literal JSON values. */
  set: z.record(z.string(), z.unknown()).default({}),
  rename: z.record(z.string(), z.string()).default({}),
  cast: z.record(z.string(), z.enum(['number', 'string', 'boolean'])).default({}),
  drop: z.array(z.string()).default([]),
  next,
});
const branchNode = z.object({
  kind: z.literal('branch'),
  id: nodeId,
  branches: z.array(z.object({ when: conditionsSchema, next })).min(1),
  otherwise: next,
});
const toolNode = z.object({
  kind: z.literal('tool'),
  id: nodeId,
  tool: z.string().min(1),
  /** Arguments templated from item data. */
  arguments: z.record(z.string(), z.unknown()).default({}),
  /** Field of the item that receives the tool's result. */
  save_as: z.string().optional(),
  next,
});
const llmNode = z.object({
  kind: z.literal('llm'),
  id: nodeId,
  instructions: z.string().min(1),
  /** JSON Schema the model's answer must satisfy; its fields are merged into the item (or under save_as). */
  output_schema: z.record(z.string(), z.unknown()).optional(),
  tools: z.array(z.string()).default([]),
  save_as: z.string().optional(),
  next,
});
const retrieveNode = z.object({
  kind: z.literal('retrieve'),
  id: nodeId,
  query: z.string().min(1),
  sources: z.array(z.string()).default([]),
  top_k: z.number().int().min(1).max(50).default(5),
  save_as: z.string().default('passages'),
  next,
});
const approvalNode = z.object({
  kind: z.literal('approval'),
  id: nodeId,
  message: z.string().default('Approve this item?'),
  when: conditionsSchema.optional(),
  next,
});
const flagNode = z.object({
  kind: z.literal('flag_for_review'),
  id: nodeId,
  reason: z.string().min(1),
  when: conditionsSchema.optional(),
  next,
});
const outputNode = z.object({
  kind: z.literal('output'),
  id: nodeId,
  format: z.enum(['json', 'csv', 'xlsx', 'markdown']).default('json'),
  file_name: z
    .string()
    .regex(/^[\w.-]+$/, 'a plain file name')
    .optional(),
  fields: z.array(z.string()).optional(),
  next,
});
const callAgentNode = z.object({
  kind: z.literal('call_agent'),
  id: nodeId,
  agent_id: z.string().uuid(),
  input: z.string().default('{{$item}}'),
  wait: z.boolean().default(true),
  save_as: z.string().default('agent_result'),
  next,
});

export const nodeSchema = z.discriminatedUnion('kind', [
  inputNode,
  transformNode,
  branchNode,
  toolNode,
  llmNode,
  retrieveNode,
  approvalNode,
  flagNode,
  outputNode,
  callAgentNode,
]);

export const toolApprovalSchema = z.object({
  mode: z.enum(['always', 'never', 'when']),
  when: conditionsSchema.optional(),
});

export const policySchema = z.object({
  /** Per tool: when a call needs a reviewer's approval. Unlisted tools use the tool's own default. */
  approvals: z.record(z.string(), toolApprovalSchema).default({}),
  approval_timeout_seconds: z.number().int().positive().default(86_400),
  on_approval_timeout: z.enum(['reject', 'approve', 'escalate']).default('escalate'),
  error_policy: z
    .object({
      retries: z.number().int().min(0).max(10).default(0),
      on_item_failure: z.enum(['continue', 'stop']).default('continue'),
      notify_email: z.string().email().optional(),
    })
    .default({ retries: 0, on_item_failure: 'continue' }),
  concurrency: z.number().int().min(1).max(500).default(10),
  public_access: z.boolean().default(false),
  /** A version goes Live only after a test run on past items (of that version) with no new failures. */
  live_after_test_on_past_items: z.boolean().optional(),
});

export const agentSpecSchema = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).default(''),
    instructions: z.string().max(100_000).default(''),
    nodes: z.array(nodeSchema).min(1),
    policy: policySchema.default(() => policySchema.parse({})),
    sources: z.array(z.string()).default([]),
    /** Connections (by name) the agent's tools may act through; it cannot become Ready while one is not connected. */
    connections: z.array(connectionName).max(50).default([]),
    /**
     * Skills (by name) loaded into every llm step's context: "name" for the newest version when a run starts,
     * "name@3" to pin one. It cannot become Ready while one is not in the workspace.
     */
    skills: z.array(skillRef).max(50).default([]),
  })
  .superRefine((spec, ctx) => {
    for (const problem of graphProblems(spec.nodes))
      ctx.addIssue({ code: 'custom', message: problem, path: ['nodes'] });
    const skillNames = spec.skills.map((ref) => parseSkillRef(ref).name);
    for (const [i, name] of skillNames.entries())
      if (skillNames.indexOf(name) !== i)
        ctx.addIssue({ code: 'custom', message: `skill "${name}" is listed twice`, path: ['skills', i] });
  });

export type Condition = z.infer<typeof conditionSchema>;
export type Conditions = z.infer<typeof conditionsSchema>;
export type AgentNode = z.infer<typeof nodeSchema>;
export type NodeKind = AgentNode['kind'];
export type Policy = z.infer<typeof policySchema>;
export type AgentSpec = z.infer<typeof agentSpecSchema>;

/** Nodes whose work is one call per item that may wait (model, tools, people, other agents). */
export const perItemKinds: ReadonlySet<NodeKind> = new Set(['llm', 'tool', 'approval', 'call_agent', 'retrieve']);

export function successors(node: AgentNode): string[] {
  const targets = node.kind === 'branch' ? [...node.branches.map((b) => b.next), node.otherwise] : [node.next];
  return targets.filter((t): t is string => typeof t === 'string');
}

/** Structural checks of a node graph: one input node first, known targets, everything reachable, no cycle. */
export function graphProblems(nodes: AgentNode[]): string[] {
  const problems: string[] = [];
  const byId = new Map<string, AgentNode>();
  for (const n of nodes) {
    if (byId.has(n.id)) problems.push(`node id "${n.id}" is used twice`);
    byId.set(n.id, n);
  }
  const inputs = nodes.filter((n) => n.kind === 'input');
  if (inputs.length !== 1 || nodes[0]?.kind !== 'input') {
    problems.push('the graph needs exactly one "input" node, and it must come first');
  }
  for (const n of nodes) {
    for (const t of successors(n))
      if (!byId.has(t)) problems.push(`node "${n.id}" points to "${t}", which does not exist`);
  }
  if (problems.length > 0) return problems;

  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, path: string[]): void => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') {
      problems.push(`the graph has a cycle: ${[...path.slice(path.indexOf(id)), id].join(' → ')}`);
      return;
    }
    state.set(id, 'visiting');
    for (const t of successors(byId.get(id)!)) visit(t, [...path, id]);
    state.set(id, 'done');
  };
  visit(nodes[0].id, []);
  for (const n of nodes) if (!state.has(n.id)) problems.push(`node "${n.id}" cannot be reached from the input node`);
  return problems;
}
