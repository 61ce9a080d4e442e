// What bin/run.js requires: the build bundles it into dist/cli/main.cjs. The CLI itself is CommonJS
// files in dist/cli (scripts/bundle.mjs): cli.cjs (src/main.ts), oclif's command index, help
// class and hook, and the chunks each command imports when it runs. They load here with the V8
// code caches the build wrote beside them (scripts/code-cache.mjs): compiling the CLI's code was
// the largest part of a start, and Node 20 caches the compilation of no module it loads itself.
// The entry and this file are CommonJS too: an ES module entry costs a start Node's ES module
// loader (about 10 ms), for nothing.
import { join } from 'node:path';
import { CodeCacheLoader } from './code-cache.js';
import { exitIfFlushed, isTerminal, watchStdio } from './stdio.js';

// The build's training run (scripts/code-cache.mjs) loads the CLI with this bundle's loader, so that the
// code cache of main.cjs holds the loader's functions as a start runs them.
export { CodeCacheLoader } from './code-cache.js';

/** Runs the CLI from `dir`, the bundle's directory (dist/cli), two levels below the package root. */
export function start(dir: string): Promise<unknown> {
  watchStdio();
  // Colour only on a terminal and never with NO_COLOR: the libraries would colour a pipe whenever
  // CI is set. Set before the CLI loads, since they read it when they are imported.
  if (process.env.NO_COLOR !== undefined || (!isTerminal(1) && !isTerminal(2) && process.env.FORCE_COLOR === undefined)) {
    process.env.FORCE_COLOR = '0';
  }
  const loader = new CodeCacheLoader(dir);
  const cli = loader.require(join(dir, 'cli.cjs')) as { main: (root: string) => Promise<unknown> };
  return cli.main(join(dir, '..', '..')).then((result) => {
    // The command has ended (oclif's error path ends the process itself). Ending it here, with the code
    // the command set, spares what Node does at the loop's natural end: it runs V8's pending tasks (a
    // young-generation GC the start-up scheduled), waits for its background compile jobs, then tears the
    // heap down (5-6 ms of --version and get pods in one interleaved A/B, beside a busy CI run). Output a
    // stream still holds (a full pipe's reader behind) keeps the natural end, which writes it first.
    exitIfFlushed();
    return result;
  });
}
