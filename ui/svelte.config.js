import adapter from '@sveltejs/adapter-node';

/** @type {import('@sveltejs/kit').Config} */
export default {
  kit: {
    // Relative to ui/: vite.config.ts moves the process there before SvelteKit loads.
    adapter: adapter({ out: 'build' }),
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
