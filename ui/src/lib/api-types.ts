// The API's wire shapes under the names the console uses, all taken from the generated client (api/client/paths.ts,
// built from the OpenAPI document): a change to the API's answers is a compile error here, not a silent drift.
// The console keeps no hand copy of them.
import type { components, paths } from '$api/client/paths';

type Schemas = components['schemas'];

/** The JSON body of route P's answer to a GET. */
type Answer<P extends keyof paths> = paths[P] extends {
  get: { responses: { 200: { content: { 'application/json': infer B } } } };
}
  ? B
  : never;

export interface List<T> {
  data: T[];
  next_cursor: string | null;
}

export type Me = Schemas['Me'];

export type Agent = Schemas['Agent'];
export type AgentState = Agent['state'];
/** An agent spec as the API takes it (create, import, save); the spec of an answer, its defaults filled in, is one. */
type AgentSpecBody = paths['/agents']['post']['requestBody']['content']['application/json'];
type AgentNode = AgentSpecBody['nodes'][number];
type BranchNode = Extract<AgentNode, { kind: 'branch' }>;
/**
 * A node read and edited field by field, as the editor holds it while a person builds it (a new branch has no
 * conditions yet): its id and kind, the links every editor draws, and whatever other fields it carries, so a new node
 * kind or field needs no console change (the API checks the spec it is sent and names each problem).
 */
export type SpecNode = Pick<AgentNode, 'id' | 'kind'> &
  Partial<Pick<BranchNode, 'branches' | 'otherwise'>> & { next?: string | null } & Record<string, unknown>;
export type AgentSpec = Omit<AgentSpecBody, 'nodes'> & { nodes: SpecNode[] };
export type Conditions = Extract<AgentNode, { kind: 'branch' }>['branches'][number]['when'];
export type Condition = Extract<Conditions, { field: string }>;

export type Run = Schemas['Run'];
export type RunStatus = Run['status'];
export type RunTrigger = Run['trigger'];
export type RunCounts = Run['counts'];
export type RunDetails = Answer<'/runs/{id}'>;
export type RunItem = Answer<'/runs/{id}/items'>['data'][number];
export type ItemStatus = RunItem['status'];
export type LogEntry = Answer<'/runs/{id}/logs'>['data'][number];

export type Approval = Schemas['Approval'];
/** An escalated approval (its wait timed out under the `escalate` policy) still waits on a reviewer. */
export const OPEN_APPROVAL_STATUSES: Approval['status'][] = ['pending', 'escalated'];
export type Review = Schemas['Review'];

export type Source = Schemas['Source'];
export type VersionPassage = Answer<'/sources/{id}/versions/{version}/passages'>['data'][number];
export type ItemSourceContext = Answer<'/runs/{id}/source-context'>;
export type Citation = Schemas['Citation'];
