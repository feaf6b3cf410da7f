import adapter from '@sveltejs/adapter-node';

/**
 * adapter-node bundles the server with a Rollup of its own, after Vite's build and out of reach of vite.config's
 * onLog, and prints every Rollup warning. Bundling svelte and zod (dependencies live at the repository root, so the
 * adapter, reading ui/package.json, keeps none of them external) makes it print some thirty warnings about their
 * sources: their internal circular imports and their `@__PURE__` comments Rollup cannot place. They are those
 * libraries' own design, nothing this project can act on, and read like errors in the first screen of `npm start`.
 * Only warnings about files under node_modules are left out; any about the console's own code still show.
 */
const thirdPartyRollupWarning = (message) =>
  typeof message === 'string' &&
  ((message.startsWith('Circular dependency: ') && message.split(' -> ').every((id) => id.includes('node_modules/'))) ||
    /^\S*node_modules\/\S+ \(\d+:\d+\): A comment\b[\s\S]*annotation that Rollup cannot interpret/.test(message) ||
    // SvelteKit's generated env module (virtual:__sveltekit/env): this console reads no env through it, so its
    // chunk comes out empty.
    message === 'Generated an empty chunk: "chunks/env.js".');

function quietAdapter(inner) {
  return {
    ...inner,
    async adapt(builder) {
      const warn = console.warn;
      console.warn = (...args) => {
        if (!thirdPartyRollupWarning(args[0])) warn(...args);
      };
      try {
        await inner.adapt(builder);
      } finally {
        console.warn = warn;
      }
    },
  };
}

/** @type {import('@sveltejs/kit').Config} */
export default {
  kit: {
    // Relative to ui/: vite.config.ts moves the process there before SvelteKit loads.
    adapter: quietAdapter(adapter({ out: 'build' })),
    // The typed API client lives with the API (api/client), generated from its OpenAPI document. The console
    // never imports db/: what a person's role allows comes from the API (GET /v1/me, `permissions`).
    alias: { $api: '../api' },
    csrf: {
      // adapter-node rebuilds the request origin as https://<host> unless ORIGIN is set, so when the console is
      // mounted in the Express web process on plain http SvelteKit's own check would refuse every form post.
      // src/hooks.server.ts checks the same thing (the form came from this host) without depending on the scheme.
      trustedOrigins: ['*'],
    },
  },
};
