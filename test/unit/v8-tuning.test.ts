import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

const tuning = new URL('../../src/core/node/v8-tuning.js', import.meta.url).href;

/** The committed V8 heap at the high water of a burst (a twentieth of what it allocates lives on), in a fresh process. */
function burstPeak(tuned: boolean): number {
  const script = `
    ${tuned ? `const { tuneV8ForAgent } = await import(${JSON.stringify(tuning)}); tuneV8ForAgent();` : ''}
    const keep = [];
    let pending = [];
    let peak = 0;
    for (let i = 0; i < 3e6; i++) {
      const o = { a: i, b: 'x' + i };
      if (i % 20 === 0) keep.push(o);
      else pending.push(o);
      if (pending.length >= 300000) {
        pending = [];
        peak = Math.max(peak, process.memoryUsage().heapTotal);
      }
    }
    console.log(peak, keep.length);`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).split(' ')[0]);
}

test("the agent's V8 flags keep the heap it commits in a burst nearer its live size than V8's defaults do", () => {
  const defaults = burstPeak(false);
  const tuned = burstPeak(true);
  assert.ok(tuned < defaults * 0.7, `committed at the burst's high water: ${Math.round(tuned / 2 ** 20)} MB tuned, ${Math.round(defaults / 2 ** 20)} MB with the defaults`);
});
