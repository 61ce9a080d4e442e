// Bundles the CLI with esbuild into dist/cli: the entry (main.js), the command
// index oclif reads (commands.js) and the not-found hook, with each command and
// what only it uses in chunks of their own, imported when that command runs.
// Resolving and reading hundreds of package files at every start is what made
// a start slow; one bundle with lazily loaded chunks is read in a few files.
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/cli');
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { main: 'src/main.ts', commands: 'src/commands.ts', 'command-not-found': 'src/hooks/command-not-found.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // oclif requires typescript only to run a CLI from its .ts sources, which this one never does.
  external: ['typescript'],
  // CommonJS packages in an ESM bundle still call require() and read __dirname.
  banner: {
    js: [
      "import { createRequire as __podctlCreateRequire } from 'node:module';",
      "import { dirname as __podctlDirname } from 'node:path';",
      "import { fileURLToPath as __podctlFileURLToPath } from 'node:url';",
      'const require = __podctlCreateRequire(import.meta.url);',
      'const __filename = __podctlFileURLToPath(import.meta.url);',
      'const __dirname = __podctlDirname(__filename);',
    ].join('\n'),
  },
  legalComments: 'none',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
});
// What each chunk holds and imports: a unit test checks from it what a command loads.
writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
console.log('bundle: dist/cli');
