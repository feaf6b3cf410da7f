// `npm test`: every suite. The global fixture (test/support/global.ts) starts a Temporal dev server and the
// embedded Postgres on free ports with throwaway data dirs, so tests never touch data/ or a running stack.
module.exports = {
  require: ['tsx/cjs', 'test/support/global.ts'],
  timeout: 120000,
  slow: 5000,
  exit: true,
};
