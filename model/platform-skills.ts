// Platform skills: built-in instructions for the tools Cadre connects agents to. A model step gets a platform
// skill in its context when the model is offered one of the skill's tools, so guidance always matches what the
// step can do (a step without SQL tools is not told how to write SQL). Data, like the tool definitions
// (model/tools.ts); the text is Markdown.
import type { ConnectionKind } from './connection';
import type { ToolName } from './tools';

export interface PlatformSkill {
  name: string;
  description: string;
  /** Offering the model any of these tools loads the skill. */
  tools: ToolName[];
  /** The connection kinds whose tools these are (for people reading the list; loading follows `tools`). */
  connectionKinds: ConnectionKind[];
  content: string;
}

export const platformSkills: PlatformSkill[] = [
  {
    name: 'SQL databases',
    description: "Inspecting and querying the agent's SQL connections (PostgreSQL, MySQL/MariaDB) safely.",
    tools: ['sql.list_tables', 'sql.query', 'sql.insert', 'sql.update'],
    connectionKinds: ['postgres', 'mysql'],
    content: [
      '- Before writing a query against a connection you have not inspected in this conversation, call `sql.list_tables` and use only the tables and columns it lists.',
      '- Never put values into the SQL text: write `?` placeholders and pass the values in `params`, in order. This holds for values from the item, from earlier results and from the user.',
      '- `sql.query` runs one statement in a read-only transaction: use it for `select` only. Change rows only with `sql.insert` or `sql.update`, which work only on a connection that allows writes and may wait for a reviewer.',
      "- A query answering more rows than the connection's row limit fails rather than truncating: filter with `where`, aggregate, or add `limit`/`order by` so the answer stays small.",
      '- Say which connection and table an answer comes from; if a table or column you need does not exist, say so instead of guessing.',
    ].join('\n'),
  },
  {
    name: 'HTTP APIs',
    description: 'Calling JSON/REST endpoints with http.request.',
    tools: ['http.request'],
    connectionKinds: [],
    content: [
      '- Call only URLs given by the instructions, the item or an earlier answer; never invent an endpoint.',
      '- Use GET to read. Use POST, PUT, PATCH or DELETE only when the instructions ask for that change, and send the body as JSON.',
      '- A failed call (4xx or 5xx) is an answer too: read its body, fix the request if the mistake is yours, and do not repeat a call that changed something.',
      '- Never put secrets or credentials you were not given for that host into headers or URLs.',
    ].join('\n'),
  },
  {
    name: 'Email',
    description: 'Sending messages with email.send.',
    tools: ['email.send'],
    connectionKinds: [],
    content: [
      '- Send an email only when the instructions call for it, to addresses from the instructions or the item, never guessed ones.',
      '- One message per recipient and purpose: do not send the same message twice.',
      '- Write a specific subject and a short plain-text body that stands on its own; do not include data the recipient should not see.',
    ].join('\n'),
  },
  {
    name: 'Files',
    description: 'Writing files people download from the run with file.generate.',
    tools: ['file.generate'],
    connectionKinds: [],
    content: [
      '- Give `rows` for tables (CSV, XLSX, JSON, Markdown) and `text` for a document written as it is; never both.',
      '- Use a plain, descriptive file name with the right extension, and list `fields` to fix the order of columns.',
    ].join('\n'),
  },
  {
    name: 'State store',
    description: "Reading and writing the agent's durable state with the state.* tools.",
    tools: ['state.get', 'state.set', 'state.increment', 'state.append'],
    connectionKinds: [],
    content: [
      '- The state store outlives the run and is shared by every item and run of the agent: read before you write, and change only the keys the instructions name.',
      '- Use `state.increment` for counters and `state.append` for lists rather than reading and writing back, so concurrent items do not overwrite each other.',
    ].join('\n'),
  },
];

/** The platform skills a model step offered these tools gets, in the order above. */
export function platformSkillsFor(tools: readonly string[]): PlatformSkill[] {
  return platformSkills.filter((s) => s.tools.some((t) => tools.includes(t)));
}
