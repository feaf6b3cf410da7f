// Writes the workflow bundle to stdout. scripts/build.cjs runs it once, into dist/workflow-bundle.js; a worker runs it
// at its start only with interceptor modules to bundle in or from the sources (scripts/worker.ts), and always in a
// process of its own: webpack and swc, once loaded to bundle, stayed in the worker's memory for as long as it ran
// (about 100 MB of its 435 MB idle, npm run bench:footprint). Its arguments are the workflow interceptor modules to
// bundle in (tracing's, when on).
import { bundleWorkflowCode } from '@temporalio/worker';

const quiet = () => undefined;

/**
 * The bundle as the worker keeps it in memory for as long as it runs (twice with CADRE_WORKFLOW_THREAD=true: in its
 * main thread and in the workflow thread). Its inline source map loses the sources' text (630 of its 1,190 kB), which only the stack trace
 * query's `showStackTraceSources` (off) reads: workflow stack traces still name the TypeScript files and lines. And
 * characters beyond Latin-1 (three dashes in messages) are escaped, which they may be anywhere in JavaScript: one
 * such character made V8 hold the whole bundle at two bytes per character.
 */
function slimBundle(code: string): string {
  // Where the SDK reads it (its extractSourceMap): the last data URL, its base64 after the first 'base64,'.
  const at = code.lastIndexOf('//# sourceMappingURL=data:');
  const base64 = code.indexOf('base64,', at) + 'base64,'.length;
  if (at >= 0 && base64 > at) {
    const map = JSON.parse(Buffer.from(code.slice(base64).trimEnd(), 'base64').toString()) as {
      sourcesContent?: unknown;
    };
    delete map.sourcesContent;
    code = code.slice(0, base64) + Buffer.from(JSON.stringify(map)).toString('base64') + '\n';
  }
  return code.replace(/[^\0-\xff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

bundleWorkflowCode({
  workflowsPath: require.resolve('../workflows'),
  workflowInterceptorModules: process.argv.slice(2),
  // Only what goes wrong: stdout carries the bundle.
  logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: console.error, error: console.error },
}).then(
  ({ code }) => process.stdout.write(slimBundle(code)),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
