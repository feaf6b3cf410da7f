// oidc-provider ships no types; test/support/oidc-provider.ts declares the little it uses.
declare module 'oidc-provider';
