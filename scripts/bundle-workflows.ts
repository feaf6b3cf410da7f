// Writes the workflow bundle to stdout. scripts/build.cjs runs it once, into dist/workflow-bundle.js; a worker runs it
// at its start only with interceptor modules to bundle in or from the sources (scripts/worker.ts), and always in a
// process of its own: webpack and swc, once loaded to bundle, stayed in the worker's memory for as long as it ran
// (about 100 MB of its 435 MB idle, npm run bench:footprint). Its arguments are the workflow interceptor modules to
// bundle in (tracing's, when on).
import { bundleWorkflowCode } from '@temporalio/worker';

const quiet = () => undefined;

bundleWorkflowCode({
  workflowsPath: require.resolve('../workflows'),
  workflowInterceptorModules: process.argv.slice(2),
  // Only what goes wrong: stdout carries the bundle.
  logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: console.error, error: console.error },
}).then(
  ({ code }) => process.stdout.write(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
