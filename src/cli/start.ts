// What bin/run.js imports: the build bundles it into dist/cli/main.js. The CLI itself is CommonJS
// files in dist/cli (scripts/bundle.mjs): cli.cjs (src/main.ts), oclif's command index, help
// class and hook, and the chunks each command imports when it runs. They load here with the V8
// code caches the build wrote beside them (scripts/code-cache.mjs): compiling the CLI's code was
// the largest part of a start, and Node 20 caches the compilation of no module it loads itself.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodeCacheLoader } from './code-cache.js';

// dist/cli/main.js → dist/cli, and the package root, where package.json and oclif.manifest.json are.
const here = fileURLToPath(new URL('.', import.meta.url));
const loader = new CodeCacheLoader(here);
const cli = loader.require(join(here, 'cli.cjs')) as { main: (root: string) => Promise<unknown> };
await cli.main(join(here, '..', '..'));
