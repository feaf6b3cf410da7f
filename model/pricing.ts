// What a model's tokens cost, by model family: shared by model steps (activities/llm-step.ts), Chat Mode (services/chat/)
// and the agent creation wizard (services/wizard/), so a conversation's and a wizard session's cost are counted exactly
// as a run's is.

// USD per million tokens (input, output), by model family; cache reads cost a tenth of input.
const prices: [RegExp, number, number][] = [
  [/haiku/, 1, 5],
  [/opus-4-[01]|opus-3/, 15, 75],
  [/opus/, 5, 25],
  [/sonnet/, 3, 15],
];

export interface TokenCounts {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
}

/** The cost in USD of these tokens on the named model (an unknown family is priced as Sonnet). */
export function modelCostUsd(modelName: string, tokens: TokenCounts): number {
  const [, inPrice, outPrice] = prices.find(([re]) => re.test(modelName)) ?? prices[prices.length - 1];
  return (
    (tokens.input_tokens * inPrice + tokens.cache_read_tokens * inPrice * 0.1 + tokens.output_tokens * outPrice) / 1e6
  );
}
