// Retrieval offered to `llm` nodes: an agent with sources gives its model steps a `search_sources` tool. What
// the model finds is recorded as the item's source context, like a retrieve node's passages.
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { AgentSpec } from '../../model/agent';
import type { ActivityDeps } from '../deps';
import { citationInstructions, citeMarker } from './citations';
import { searchSourcesForItem } from './retrieve-step';

export const searchSourcesToolName = 'search_sources';

const input = z.object({
  query: z.string().min(1),
  sources: z.array(z.string()).optional(),
  top_k: z.number().int().min(1).max(20).optional(),
});

export interface SourcesTool {
  definition: Anthropic.Tool;
  /** Added to the system prompt: which sources there are and how to cite them. */
  instructions: string;
  call(raw: unknown, ctx: { deps: ActivityDeps; runId: string; seq: number; nodeId: string }): Promise<string>;
}

export function sourcesToolFor(spec: AgentSpec): SourcesTool | undefined {
  if (spec.sources.length === 0) return undefined;
  return {
    definition: {
      name: searchSourcesToolName,
      description: `Search the agent's reference sources (${spec.sources.join(', ')}) and return the most relevant passages, each with its source, version, page and paragraph for citing.`,
      input_schema: z.toJSONSchema(input, { io: 'input' }) as Anthropic.Tool.InputSchema,
    },
    instructions: `You can search these sources with ${searchSourcesToolName}: ${spec.sources.map((s) => `"${s}"`).join(', ')}. ${citationInstructions}`,
    async call(raw, { deps, runId, seq, nodeId }) {
      const args = input.parse(raw);
      const passages = await searchSourcesForItem({
        deps,
        runId,
        seq,
        nodeId,
        sourceNames: args.sources?.filter((s) => spec.sources.includes(s)) ?? spec.sources,
        query: args.query,
        topK: args.top_k ?? 5,
      });
      return JSON.stringify(
        passages.map((p) => ({
          cite_as: citeMarker(p.passage_id),
          source: p.source,
          version: p.version,
          document: p.document,
          page: p.page,
          paragraph: p.paragraph,
          text: p.text,
          citation: p.citation_url,
        })),
      );
    },
  };
}
