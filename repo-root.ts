// The folder of the checkout (or of the image): where ui/build, examples/, .models and .tools are. Code runs either
// from its TypeScript sources (tests, through tsx) or compiled one folder deeper, in dist/ (scripts/build.cjs), so a
// path relative to a module's own folder would differ between the two.
import path from 'node:path';

export const repoRoot = __filename.endsWith('.js') ? path.dirname(__dirname) : __dirname;
