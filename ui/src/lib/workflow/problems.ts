// What stops an edited agent from saving, in plain words that point at the node and field: the agent spec's own zod
// schema (model/agent.ts, as the API checks it) read back as "Node 'route' → Branch 1, condition 1: value is
// required" rather than zod's "Too small: expected string to have >=1 characters".
import { agentSpecSchema } from '../../../../model/agent';
import { plainIssue } from '$lib/plain-issue';
import { labelOf } from '$lib/schema-form';
import type { AgentSpec, Conditions, SpecNode } from '$lib/api-types';

export interface Problem {
  /** The node it is about, to highlight and open it; null for the agent as a whole. */
  node: string | null;
  text: string;
}

const FIELD_WORDS: Record<string, string> = {
  op: 'comparison',
  next: 'Then items go to',
  otherwise: 'Otherwise, items go to',
  field: 'field',
  value: 'value',
  id: 'Name on the canvas',
  save_as: 'Save the result as',
  agent_id: 'Agent',
  top_k: 'Passages to find',
};

const wordOf = (key: string) => FIELD_WORDS[key] ?? labelOf(key);

/**
 * A path inside a node, as a person reads it: ['branches', 0, 'when', 'all', 1, 'value'] → "Branch 1, condition 2"
 * and the field "value".
 */
export function where(path: PropertyKey[]): { place: string; field: string } {
  const parts: string[] = [];
  let field = '';
  for (let i = 0; i < path.length; i++) {
    const key = path[i];
    const nextIsIndex = typeof path[i + 1] === 'number';
    if (key === 'branches' && nextIsIndex) {
      parts.push(`Branch ${(path[i + 1] as number) + 1}`);
      i++;
    } else if (key === 'when') {
      if ((path[i + 1] === 'all' || path[i + 1] === 'any') && typeof path[i + 2] === 'number') {
        parts.push(`condition ${(path[i + 2] as number) + 1}`);
        i += 2;
      } else parts.push('condition 1');
    } else if (typeof key === 'number') parts.push(`entry ${key + 1}`);
    else if (i === path.length - 1) field = wordOf(String(key));
    else parts.push(wordOf(String(key)));
  }
  const place = parts.join(', ');
  return { place: place.charAt(0).toUpperCase() + place.slice(1), field };
}

/**
 * Conditions are checked here first: the schema lets a value be left out, but "amount is more than (nothing)" is a
 * slip, not a choice.
 */
function conditionProblems(when: Conditions | undefined, place: string): string[] {
  if (!when || typeof when !== 'object') return [];
  const list = 'all' in when ? when.all : 'any' in when ? when.any : [when];
  if (!Array.isArray(list)) return [];
  return list.flatMap((c, i) => {
    const at = `${place}condition ${i + 1}`;
    const out: string[] = [];
    if (!c?.field?.trim()) out.push(`${at}: field is required`);
    if (c && !['exists', 'not_exists'].includes(c.op) && (c.value === undefined || c.value === ''))
      out.push(`${at}: value is required`);
    return out;
  });
}

const nodeLabel = (id: string) => `Node '${id}'`;

/**
 * The graph checks (model/agent.ts graphProblems) in the canvas's words: what is wrong and what to do on the canvas,
 * not "cannot be reached from the input node". A message not listed here is shown as the API words it.
 */
function graphWords(message: string): { node: string | null; text: string } {
  let m = /^node "([^"]+)" cannot be reached from the input node$/.exec(message);
  if (m)
    return {
      node: m[1],
      text: `${nodeLabel(m[1])} is not connected: no arrow leads to it, so no item would reach it. Drag from the right edge of the node before it onto this node, or delete it.`,
    };
  m = /^the graph has a cycle: (.+)$/.exec(message);
  if (m)
    return {
      node: m[1].split(' → ')[0],
      text: `Workflow: the nodes ${m[1]} lead back round in a loop, so an item would never finish. Send one of them somewhere else.`,
    };
  m = /^node id "([^"]+)" is used twice$/.exec(message);
  if (m) return { node: m[1], text: `Workflow: two nodes are called '${m[1]}'. Rename one of them.` };
  m = /^node "([^"]+)" points to "([^"]+)", which does not exist$/.exec(message);
  if (m)
    return {
      node: m[1],
      text: `${nodeLabel(m[1])} leads to '${m[2]}', and there is no node of that name. Choose where its items go.`,
    };
  if (/exactly one "input" node/.test(message))
    return { node: null, text: 'Workflow: it needs exactly one Input node, where the items come in.' };
  return { node: /node "([^"]+)"/.exec(message)?.[1] ?? null, text: `Workflow: ${message}` };
}

export function specProblems(spec: AgentSpec): Problem[] {
  const out: Problem[] = [];
  const nodes: SpecNode[] = Array.isArray(spec.nodes) ? spec.nodes : [];
  for (const node of nodes) {
    const found =
      node.kind === 'branch'
        ? (node.branches ?? []).flatMap((b, i) => conditionProblems(b.when, `Branch ${i + 1}, `))
        : conditionProblems(node.when as Conditions | undefined, '');
    for (const text of found)
      out.push({ node: node.id, text: `${nodeLabel(node.id)} → ${text.charAt(0).toUpperCase()}${text.slice(1)}` });
  }
  const parsed = agentSpecSchema.safeParse(spec);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const [top, index, ...rest] = issue.path;
      if (top === 'nodes' && typeof index === 'number') {
        const id = nodes[index]?.id || `number ${index + 1}`;
        const { place, field } = where(rest);
        const subject = [place, field].filter(Boolean).join(': ') || 'It';
        out.push({ node: nodes[index]?.id ?? null, text: `${nodeLabel(id)} → ${subject} ${plainIssue(issue)}` });
      } else if (top === 'nodes') {
        out.push(graphWords(issue.message));
      } else {
        const { place, field } = where(issue.path);
        out.push({ node: null, text: `${[place, field].filter(Boolean).join(': ')} ${plainIssue(issue)}` });
      }
    }
  }
  const seen = new Set<string>();
  return out.filter((p) => !seen.has(p.text) && seen.add(p.text));
}
