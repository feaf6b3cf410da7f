import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const uiDir = fileURLToPath(new URL('.', import.meta.url));
const repoDir = fileURLToPath(new URL('..', import.meta.url));

// `npm run build:ui` runs from the repository root, but SvelteKit reads svelte.config.js and resolves src/,
// .svelte-kit/ and the adapter's output from process.cwd() when its plugin module is first evaluated. Moving into
// ui/ before importing it keeps every path relative to ui/, whichever directory the command starts in. (SvelteKit
// loads this file again from a worker thread, where chdir is not allowed; by then the process is already there.)
if (resolve(process.cwd()) !== resolve(uiDir)) process.chdir(uiDir);
const { sveltekit } = await import('@sveltejs/kit/vite');

export default defineConfig({
  // No `root`: SvelteKit sets it to the working directory (ui/, above) and prints a notice for each build
  // environment when one is given.
  // Dependencies are installed at the repository root, not in ui/.
  cacheDir: `${repoDir}node_modules/.vite-ui`,
  server: { fs: { allow: [repoDir] } },
  plugins: [sveltekit()],
  // Svelte component libraries are compiled with the console: vite-plugin-svelte finds them from ui/package.json,
  // which lists no dependencies (they are installed at the root), so they are named here.
  ssr: { noExternal: ['@xyflow/svelte'] },
  // Rolldown's warnings about slow plugins describe SvelteKit's own build steps, nothing a user can act on, and
  // would fill the first screen of `npm start`.
  build: { rolldownOptions: { checks: { bundlerTimings: false } } },
});
