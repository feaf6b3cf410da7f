export * from './agent-run';
export * from './run-page';
