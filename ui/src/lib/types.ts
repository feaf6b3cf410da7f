// Wire shapes of API v1 (api/CONTRACT.md), as the console reads them. Node specs are kept loose on purpose: the
// console shows whatever fields a node carries, so a new node kind or field needs no console change.

export interface List<T> {
  data: T[];
  next_cursor: string | null;
}

export type AgentState = 'draft' | 'ready' | 'live' | 'paused';
export type RunStatus = 'running' | 'paused' | 'completed' | 'failed' | 'needs_review' | 'cancelled' | 'skipped';
export type RunTrigger =
  'manual' | 'api' | 'schedule' | 'webhook' | 'form' | 'chain' | 'event' | 'test' | 'run_link' | 'agent' | 'inbox';
export type ItemStatus = 'pending' | 'running' | 'done' | 'failed' | 'needs_review' | 'skipped';
export type ApprovalStatus = 'pending' | 'escalated' | 'approved' | 'rejected' | 'timed_out' | 'cancelled';

/** An escalated approval (its wait timed out under the `escalate` policy) still waits on a reviewer. */
export const OPEN_APPROVAL_STATUSES: ApprovalStatus[] = ['pending', 'escalated'];

export interface Condition {
  field: string;
  op: string;
  value?: unknown;
}
export type Conditions = Condition | { all: Condition[] } | { any: Condition[] };

export interface SpecNode {
  id: string;
  kind: string;
  next?: string | null;
  branches?: { when: Conditions; next?: string | null }[];
  otherwise?: string | null;
  [field: string]: unknown;
}

export interface AgentSpec {
  name: string;
  description?: string;
  instructions?: string;
  nodes: SpecNode[];
  policy?: Record<string, unknown>;
  sources?: string[];
  /** The workspace connections its tools act through, by name. */
  connections?: string[];
  /** The workspace skills its model steps follow: "name" (the newest version when a run starts) or "name@N". */
  skills?: string[];
}

export interface Agent {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  state: AgentState;
  current_version: number;
  /** The version whose test run succeeded, which is what lets a draft be marked ready. */
  tested_version?: number | null;
  created_at: string;
  updated_at: string;
  /** In list answers; the single-agent answer may leave the two out. */
  last_run?: Run | null;
  runs_this_month?: number;
  spec?: AgentSpec;
}

export interface RunCounts {
  total: number;
  pending: number;
  /** Not every API build reports running separately from pending. */
  running?: number;
  done: number;
  failed: number;
  needs_review: number;
  skipped: number;
}

export interface Run {
  id: string;
  agent_id: string;
  agent_name: string;
  agent_version: number;
  status: RunStatus;
  trigger: RunTrigger;
  input: unknown;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  counts: RunCounts;
  error: string | null;
  /** The run (and item) whose call_agent step started this one. */
  called_by?: { run_id: string; item_seq: number | null; node_id: string | null } | null;
  /** The run whose failed items this run retries. */
  retry_of?: string | null;
  /** A test run on past items (tools that act elsewhere only planned their effect). */
  test_mode?: boolean;
  /** The OpenTelemetry trace the run started in; null with tracing off. */
  trace_id?: string | null;
  /** `trace`: the run's trace in the tracing backend, when the operator set CADRE_TRACE_URL. */
  links: { self: string; console: string; temporal: string | null; trace?: string | null };
}

export interface NodeActivity {
  node_id: string;
  kind: string;
  items_in: number;
  items_done: number;
  items_failed: number;
  started_at: string | null;
  ended_at: string | null;
}

export interface RunFile {
  id: string;
  name: string;
  content_type: string;
  size: number;
  url: string;
}

export interface RunDetails extends Run {
  node_activity: NodeActivity[];
  approvals: Approval[];
  outputs: { node_id: string; data: unknown }[];
  files: RunFile[];
  usage: { input_tokens: number; output_tokens: number; cost_usd: number } | null;
  /** The runs that retry this one's failed items, newest first. */
  retried_by?: string[];
  /** For a retry or a test on past items: the runs its items come from. */
  item_sources?: { run_id: string; items: number[] }[];
  retry?: { failed_items: number; retryable_items: number[]; held_back_items: number[] };
}

export interface RunItem {
  seq: number;
  status: ItemStatus;
  data: unknown;
  output: unknown;
  error: string | null;
  /** Null when the item has not reached a model that reasoned. */
  reasoning: unknown[] | null;
}

export interface LogEntry {
  seq: number;
  at: string;
  level: string;
  node_id: string | null;
  item_seq: number | null;
  message: string;
}

export interface Approval {
  id: string;
  run_id: string;
  item_seq: number | null;
  node_id: string;
  tool: string | null;
  /** The gate's question, for approval nodes ("Pay 4200 to Globex?"). */
  message?: string | null;
  arguments: unknown;
  status: ApprovalStatus;
  /** The arguments as approved with edits (null otherwise). */
  decided_arguments?: unknown;
  requested_at: string;
  decided_at: string | null;
  decided_by: string | null;
  reason: string | null;
}

/** An item a flag_for_review node stopped, in the review queue. */
export interface Review {
  id: string;
  run_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: number;
  item_seq: number;
  node_id: string;
  reason: string;
  status: 'pending' | 'accepted' | 'rejected' | 'sent_on' | 'cancelled';
  data: unknown;
  output: unknown;
  decision: {
    action: 'accept' | 'reject' | 'send_to';
    output?: Record<string, unknown>;
    reason?: string;
    node_id?: string;
  } | null;
  decided_by: string | null;
  decided_at: string | null;
  created_at: string;
}

/** What every form action answers, so one notice component can show it. */
export interface ActionOutcome {
  ok: boolean;
  message: string;
}

export type SourceStatus = 'indexing' | 'ready' | 'failed' | 'archived';

export interface SourceDocument {
  id: string;
  file_name: string;
  url: string | null;
  format: string | null;
  size: number | null;
  status: string;
  error: string | null;
  pages_total: number;
  pages_done: number;
}

export interface SourceVersion {
  version: number;
  status: SourceStatus;
  error: string | null;
  progress: { pages_done: number; pages_total: number };
  passages: number;
  created_at: string;
  created_by: string | null;
  indexed_at: string | null;
  activated_at: string | null;
  archived_at: string | null;
  documents: SourceDocument[];
}

export interface Source {
  id: string;
  name: string;
  kind: 'files' | 'url';
  status: SourceStatus;
  /** The version agents use; null until one has finished indexing. */
  current_version: number | null;
  latest_version: SourceVersion | null;
  /** In the single-source answer: every version, newest first. */
  versions?: SourceVersion[];
  used_by: string[];
  created_at: string;
  updated_at: string;
}

/** A line's box in page units (PDF points or image pixels) from the page's top-left corner. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Passage {
  passage_id: string;
  source: string;
  version: number;
  document: string;
  page: number | null;
  paragraph: number;
  text: string;
  score: number;
}

/** A passage of a source version, as indexed. */
export interface VersionPassage {
  passage_id: string;
  document: string;
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
}

/** What one retrieval of an item found: the "source context used" of run details. */
export interface SourceContext {
  item_seq: number;
  node_id: string;
  query: string;
  passages: Passage[];
  at: string;
}

/** A passage the model cited in an item's answer and that the item had indeed retrieved. */
export interface CitedPassage {
  item_seq: number;
  node_id: string;
  passage_id: string;
  source: string;
  version: number;
  page: number | null;
  paragraph: number;
}

/** An item's source context: its retrievals, and the citations of its answer that were kept. */
export interface ItemSourceContext {
  data: SourceContext[];
  citations?: CitedPassage[];
}

export interface Citation {
  id: string;
  source: { id: string; name: string };
  version: number;
  version_status: SourceStatus;
  document: { id: string; file_name: string; format: string | null };
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
  boxes: Box[] | null;
  ocr_confidence: number | null;
  page_size: { width: number; height: number; unit: string } | null;
  ocr: boolean;
  page_image_url: string | null;
}
