// workflows/ (DESIGN.md "Top-level layout"): Temporal workflow code only, deterministic and sandboxed, one
// workflow per file, all re-exported here (the worker's workflowsPath). Workflows import workflows/ and model/,
// and their activities as types (proxyActivities). contracts.ts holds the signals, updates, queries, workflow
// ids and inputs and imports nothing at run time: code outside the sandbox imports the contract, never a workflow.
export * from './agent-run';
export * from './run-page';
export * from './scheduled-run';
export * from './event-poll';
export * from './index-source';
export * from './account-erasure';
export * from './plan-change';
export * from './delivery-batch';
export * from './mailbox-watch';
