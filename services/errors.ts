// A refusal by a service: what was refused (`code`, a sentence for a person) and the HTTP status it is answered with
// as a problem (api/problem.ts). The same refusal on every door: the API and the public doors answer it, the engine's
// doors record its code and message (on the agent's timeline, on the item that called).
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
