// The `retrieve` node: searches the agent's sources (or the node's own selection of them) with a query templated
// from the item, saves the passages on the item and records them as the item's source context in run details.
import { ApplicationFailure } from '@temporalio/common';
import type { AgentNode, AgentSpec } from '../../model/agent';
import { render, type ItemData } from '../../model/interpreter';
import type { ActivityDeps } from '../deps';
import { retrieve } from './retrieval';
import type { RetrievedPassage } from '../../model/retrieval';

export async function searchSourcesForItem({
  deps,
  runId,
  seq,
  nodeId,
  sourceNames,
  query,
  topK,
}: {
  deps: ActivityDeps;
  runId: string;
  seq: number;
  nodeId: string;
  sourceNames: string[];
  query: string;
  topK: number;
}): Promise<RetrievedPassage[]> {
  const { knex, config } = deps;
  if (sourceNames.length === 0)
    throw ApplicationFailure.nonRetryable(
      'the agent has no sources to search: add source names to the agent\'s "sources"',
      'NoSources',
    );
  if (query.trim() === '')
    throw ApplicationFailure.nonRetryable('the search query is empty for this item', 'EmptyQuery');
  const run = await knex('runs').where({ id: runId }).first('workspace_id', 'created_at');
  const passages = await retrieve(knex, {
    workspaceId: run.workspace_id,
    sourceNames,
    query,
    topK,
    asOf: run.created_at, // a run keeps the versions in force when it started
    publicUrl: config.web.publicUrl,
  });
  await knex('run_source_context')
    .insert({ run_id: runId, item_seq: seq, node_id: nodeId, query, passages: JSON.stringify(passages) })
    .onConflict(['run_id', 'item_seq', 'node_id', 'query'])
    .merge();
  return passages;
}

export function runRetrieveStep({
  deps,
  spec,
  node,
  data,
  runId,
  seq,
}: {
  deps: ActivityDeps;
  spec: AgentSpec;
  node: Extract<AgentNode, { kind: 'retrieve' }>;
  data: ItemData;
  runId: string;
  seq: number;
}): Promise<RetrievedPassage[]> {
  const rendered = render(node.query, data);
  const query = typeof rendered === 'string' ? rendered : JSON.stringify(rendered ?? '');
  return searchSourcesForItem({
    deps,
    runId,
    seq,
    nodeId: node.id,
    sourceNames: node.sources.length > 0 ? node.sources : spec.sources,
    query,
    topK: node.top_k,
  });
}
