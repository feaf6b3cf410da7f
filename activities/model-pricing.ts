// What model calls cost, by model family: shared by model steps (activities/llm-step.ts) and the agent creation
// wizard (api/wizard/), so a run's cost and a wizard session's cost are priced the same way.

// USD per million tokens (input, output), by model family; cache reads cost a tenth of input.
const prices: [RegExp, number, number][] = [
  [/haiku/, 1, 5],
  [/opus-4-[01]|opus-3/, 15, 75],
  [/opus/, 5, 25],
  [/sonnet/, 3, 15],
];

/** Input and output prices (USD per million tokens) of a model; an unknown name is priced as Sonnet. */
export function modelPrices(modelName: string): [input: number, output: number] {
  const [, input, output] = prices.find(([re]) => re.test(modelName)) ?? prices[prices.length - 1];
  return [input, output];
}

export function modelCostUsd(
  modelName: string,
  usage: { input_tokens: number; output_tokens: number; cache_read_tokens: number },
): number {
  const [inPrice, outPrice] = modelPrices(modelName);
  return (
    (usage.input_tokens * inPrice + usage.cache_read_tokens * inPrice * 0.1 + usage.output_tokens * outPrice) / 1e6
  );
}
