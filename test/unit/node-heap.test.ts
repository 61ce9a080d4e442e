import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { NODE_HEAP_GROWING_PERCENT, boundHeapGrowth } from '../../src/core/node/heap.js';

const run = promisify(execFile);
const HEAP_MODULE = join(import.meta.dirname, '..', '..', 'src', 'core', 'node', 'heap.js');

/**
 * A live set of 48 MB of small objects built while ten times as much garbage is made (pods starting
 * at once), in a child process: the most old space committed, and the old space live after a full GC
 * (MiB). Full GCs there are atomic (no incremental or concurrent marking), so that when one runs
 * depends on the heap's limit alone, not on how busy the machine is.
 */
const BURST = `
const { boundHeapGrowth } = await import(process.argv[1]);
const { getHeapSpaceStatistics } = await import('node:v8');
const old = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
if (process.argv[2] === 'bound') boundHeapGrowth({ execArgv: [] });
const live = [];
let peak = 0;
let sink;
for (let i = 0; i < 48; i++) {
  live.push(Array.from({ length: 16384 }, (_, j) => ({ i, j })));
  for (let g = 0; g < 10; g++) sink = Array.from({ length: 16384 }, (_, j) => ({ g, j }));
  peak = Math.max(peak, old().space_size);
}
globalThis.gc();
console.log(JSON.stringify({ peak: peak / 2 ** 20, live: old().space_used_size / 2 ** 20, kept: live.length + sink.length }));
`;

async function burst(mode: 'bound' | 'default'): Promise<{ peak: number; live: number }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const { stdout } = await run(process.execPath, ['--expose-gc', '--single-threaded-gc', '--no-incremental-marking', '--input-type=module', '-e', BURST, HEAP_MODULE, mode], { env });
  return JSON.parse(stdout) as { peak: number; live: number };
}

describe('the node heap bound', () => {
  it('leaves a heap growing factor Node was started with alone', () => {
    assert.equal(boundHeapGrowth({ execArgv: ['--heap-growing-percent=80'] }), false);
    assert.equal(boundHeapGrowth({ execArgv: ['--max-old-space-size=512', '--heap_growing_percent=10'] }), false);
  });

  it('has no NODE_OPTIONS case to honour: Node refuses the flag there before any script runs', async () => {
    for (const flag of ['--heap-growing-percent=10', '--heap_growing_percent=10']) {
      const r = await run(process.execPath, ['-e', 'process.stdout.write("ran")'], { env: { ...process.env, NODE_OPTIONS: flag } }).catch((err: { code?: number; stdout?: string; stderr?: string }) => err);
      assert.equal((r as { stdout?: string }).stdout ?? '', '', flag);
      assert.match((r as { stderr?: string }).stderr ?? '', /is not allowed in NODE_OPTIONS/, flag);
    }
  });

  // Without the bound the same burst commits 123 MiB of old space for 33 MiB live here (V8's factor of up to 4x).
  it(`keeps a burst's old generation within ${1 + NODE_HEAP_GROWING_PERCENT / 100}x its live set`, async () => {
    const bound = await burst('bound');
    // 1.5x the live set, plus room for V8's minimum growing step and the live set's growth between two full GCs.
    const ceiling = bound.live * (1 + NODE_HEAP_GROWING_PERCENT / 100) + 32;
    assert.ok(bound.peak <= ceiling, `bounded: old space ${bound.peak.toFixed(0)} MiB for ${bound.live.toFixed(0)} MiB live (at most ${ceiling.toFixed(0)})`);
  });
});
