export * from './agent-run';
export * from './run-page';
export * from './scheduled-run';
export * from './event-poll';
export * from './index-source';
export * from './account-erasure';
export * from './plan-change';
export * from './delivery-batch';
