import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { LARGE_BUFFER_BYTES, raiseMallocThresholds } from '../../src/core/node/malloc.js';

const run = promisify(execFile);
const MALLOC_MODULE = join(import.meta.dirname, '..', '..', 'src', 'core', 'node', 'malloc.js');

/**
 * In a child process: ten list answers of about 8 MiB in turn, each a page larger than the one
 * before (a list grows as pods are added), each filled (as a decoder reads it) and dropped before
 * the next, with a GC between them so V8 frees each one. Prints the minor page faults the ten took:
 * the kernel's count of pages faulted in (/proc/self/stat), not a time.
 */
const ANSWERS = `
const { readFileSync } = await import('node:fs');
const { raiseMallocThresholds } = await import(process.argv[1]);
const minorFaults = () => Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[7]);
if (process.argv[2] === 'raised') raiseMallocThresholds();
globalThis.gc();
await new Promise((r) => setTimeout(r, 50));
const before = minorFaults();
for (let i = 0; i < 10; i++) {
  Buffer.allocUnsafe(8 * 1024 * 1024 + i * 4096).fill(i);
  globalThis.gc();
  await new Promise((r) => setTimeout(r, 20));
}
console.log(JSON.stringify({ faults: minorFaults() - before }));
`;

async function answers(mode: 'raised' | 'default'): Promise<number> {
  const env = { ...process.env };
  delete env.GLIBC_TUNABLES;
  delete env.MALLOC_MMAP_THRESHOLD_;
  const { stdout } = await run(process.execPath, ['--expose-gc', '--input-type=module', '-e', ANSWERS, MALLOC_MODULE, mode], { env });
  return (JSON.parse(stdout) as { faults: number }).faults;
}

// glibc only: musl and others have no dynamic mmap threshold to raise.
const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

describe('malloc thresholds', () => {
  it('raise once per process', () => {
    assert.equal(raiseMallocThresholds(), true);
    assert.equal(raiseMallocThresholds(), false);
    assert.ok(LARGE_BUFFER_BYTES >= 9 * 1024 * 1024, 'above a 5,000-pod ListContainers answer');
  });

  it('let large buffers reuse the pages of the ones freed before them', { skip: !glibc && 'not glibc' }, async () => {
    const pages = (10 * 8 * 1024 * 1024) / 4096;
    const fresh = await answers('default');
    const raised = await answers('raised');
    // By default each answer larger than the last freed is a new mapping, every page faulted in afresh.
    assert.ok(fresh >= pages * 0.9, `default: ${fresh} minor faults for ${pages} pages`);
    // Raised, the first answer's pages are faulted in once and the other nine reuse them.
    assert.ok(raised < pages * 0.3, `raised: ${raised} minor faults for ${pages} pages`);
  });
});
