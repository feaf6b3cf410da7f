// services/ (DESIGN.md "Top-level layout"): the application's use cases, called by the API, the activities and
// the CLI alike: chat/ (Chat Mode), wizard/ (agent creation), inbox/ (the SMTP listener and intake), approvals,
// telemetry/, runs/ (start.ts: the one door that opens a run; pause, retry, test runs, a run's JSON), triggers/
// (schedules, batches, events, chains), caller.ts (who calls and what they may do), sources/formats.ts, and
// adapters.ts: the contract of what the API reaches through the worker's code, built by the composition root
// (scripts/api-adapters.ts). Services import model/, db/, schedules/, the Temporal client and workflows/contracts.ts;
// no HTTP types, never api/ or activities/.
//
// The error a use case refuses with: a status and a problem type code the API renders as application/problem+json
// (api/problem.ts). Here, not in api/, so services/ throw it without importing the HTTP layer.
//
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
