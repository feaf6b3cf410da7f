import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

export default tseslint.config(
  {
    ignores: [
      'eslint.config.mjs',
      '.mocharc.cjs',
      'node_modules/**',
      '.tools/**',
      'data/**',
      'ui/**',
      'dist/**',
      'test-output/**',
      'scripts/*.cjs',
    ],
  },
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O, no stray promises. The
    // shared model is imported there too, so it keeps the same rules.
    files: ['workflows/**/*.ts', 'model/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [...builtinModules, ...builtinModules.map((m) => `node:${m}`)] }],
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
);
