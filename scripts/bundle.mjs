// Bundles the CLI with esbuild into dist/cli, as ES modules: oclif's execute for bin/run.js (main.js),
// the command index oclif's explicit discovery imports (commands.js), the help class, the not-found
// hook, and the worker cp receives in (chunks/cp-receive.js, beside the chunk that starts it). They
// share one copy of oclif through esbuild's chunks, and what a command import()s is a chunk of its
// own, loaded when that path runs. Dependencies are bundled as published: no plugin here reads
// or rewrites a dependency's source.
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/cli');
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    main: 'src/main.ts',
    commands: 'src/commands.ts',
    help: 'src/help.ts',
    'command-not-found': 'src/hooks/command-not-found.ts',
    'chunks/cp-receive': 'src/cli/cp-receive.ts',
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // The CommonJS packages bundled into these ES modules call require, and read __filename and __dirname.
  banner: {
    js: [
      "import { createRequire as __podctlCreateRequire } from 'node:module';",
      "import { fileURLToPath as __podctlFileURLToPath } from 'node:url';",
      'const require = __podctlCreateRequire(import.meta.url);',
      'const __filename = __podctlFileURLToPath(import.meta.url);',
      "const __dirname = __podctlFileURLToPath(new URL('.', import.meta.url));",
    ].join(' '),
  },
  // oclif requires typescript only to run a CLI from its .ts sources, which this one never does.
  external: ['typescript'],
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
// What each chunk holds and imports: a unit test checks from it what a command loads.
writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
console.log('bundle: dist/cli');
