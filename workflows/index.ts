export * from './agent-run';
export * from './run-page';
export * from './scheduled-run';
export * from './index-source';
