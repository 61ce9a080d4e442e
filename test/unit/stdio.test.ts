import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIRECT_LIMIT } from '../../src/cli/stdio.js';

const STDIO = pathToFileURL(join(import.meta.dirname, '..', '..', 'src', 'cli', 'stdio.js')).href;
const ROOT = join(import.meta.dirname, '..', '..', '..');

/** A script that watches its stdio as the CLI does, then runs `body` (an ES module's text, with the module as `s`). */
const script = (body: string) => ['--input-type=module', '-e', `import * as s from ${JSON.stringify(STDIO)};\ns.watchStdio();\n${body}`];

/** That script in a child process, its output on pipes read by the caller. */
function child(body: string): ReturnType<typeof spawn> {
  return spawn(process.execPath, script(body), { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** That script run to its end. */
const runToEnd = (body: string) => spawnSync(process.execPath, script(body), { encoding: 'utf8', maxBuffer: 1 << 20 });


test('the CLI writes its lines without making process.stdout or process.stderr, and a stream made since takes the writes that follow, in order', () => {
  const r = runToEnd(`s.writeStdout('one\\n');
s.writeStderr('err one\\n');
const before = [s.stdioMade(1), s.stdioMade(2)];
process.stdout.write('two\\n');
s.writeStdout('three\\n');
s.writeStderr(JSON.stringify({ before, after: [s.stdioMade(1), s.stdioMade(2)] }) + '\\n');`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'one\ntwo\nthree\n');
  const [first, made] = r.stderr.split('\n');
  assert.equal(first, 'err one');
  assert.deepEqual(JSON.parse(made!), { before: [false, false], after: [true, false] });
});

test('a full non-blocking stdout (EAGAIN) gets the rest through the stream, which waits for the reader: every byte arrives, in order', async () => {
  // net.Socket on fd 1 makes the pipe non-blocking, as a Node parent sharing it would, without making
  // process.stdout. The child fills the pipe itself, then writes a line. The parent does not read
  // yet, but its paused stream still takes up to its high-water mark from the pipe: a line that
  // found room so went out directly, and the child fills the pipe again, until one met it full.
  const c = child(`import { Socket } from 'node:net';
import { writeSync } from 'node:fs';
new Socket({ fd: 1, readable: false, writable: true });
const fills = [];
for (let lines = 0; !s.stdioMade(1) && lines < 1000; lines++) {
  let filled = 0;
  for (;;) {
    try { filled += writeSync(1, Buffer.alloc(4096, 'f')); } catch (err) { if (err.code !== 'EAGAIN') throw err; break; }
  }
  fills.push(filled);
  s.writeStdout('a line after a fill\\n');
}
process.stderr.write(JSON.stringify({ fills, made: s.stdioMade(1) }) + '\\n');`);
  let stderr = '';
  const report = new Promise<{ fills: number[]; made: boolean }>((resolve) => {
    c.stderr!.on('data', (d: Buffer) => {
      stderr += d;
      if (stderr.includes('\n')) resolve(JSON.parse(stderr) as { fills: number[]; made: boolean });
    });
  });
  const { fills, made } = await report;
  assert.equal(made, true, 'a line went to the stream');
  let stdout = '';
  c.stdout!.on('data', (d: Buffer) => (stdout += d));
  const code = await new Promise((resolve) => c.on('close', resolve));
  assert.equal(code, 0);
  assert.equal(stdout, fills.map((n) => `${'f'.repeat(n)}a line after a fill\n`).join(''));
});

test(`past ${DIRECT_LIMIT / 1024} KB written directly, the stream takes the writes (a blocking pipe whose reader pauses would stop the process): every line arrives, in order`, () => {
  const r = runToEnd(`const made = [];
for (let i = 0; i < 5; i++) { s.writeStdout(i + ':' + 'x'.repeat(6000) + '\\n'); made.push(s.stdioMade(1)); }
s.writeStderr(JSON.stringify(made) + '\\n');`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, Array.from({ length: 5 }, (_, i) => `${i}:${'x'.repeat(6000)}\n`).join(''));
  assert.deepEqual(JSON.parse(r.stderr), [false, false, true, true, true]);
});

test('a reader gone (EPIPE, as with | head) ends no command: the rest is dropped, exit 0, nothing on stderr', async () => {
  const c = child(`const text = Array.from({ length: 20000 }, (_, i) => 'line ' + i + ' ' + 'x'.repeat(40) + '\\n').join('');
for (let i = 0; i < text.length; i += 4096) s.writeStdout(text.slice(i, i + 4096));
s.writeStderr('done\\n');`);
  let stderr = '';
  c.stderr!.on('data', (d: Buffer) => (stderr += d));
  c.stdout!.once('data', () => c.stdout!.destroy());
  const code = await new Promise((resolve) => c.on('close', resolve));
  assert.equal(code, 0);
  assert.equal(stderr, 'done\n');
});

test('a command that has ended ends the process at once, with its exit code, when nothing is queued for output', () => {
  // A timer the loop would wait a minute for: the process ends first, with the code the command set.
  const r = runToEnd(`setTimeout(() => s.writeStdout('the loop ran on\\n'), 60_000);
s.writeStdout('done\\n');
process.exitCode = 3;
s.exitIfFlushed();`);
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stdout, 'done\n');
});

test('a stream that still holds output keeps the process until its reader has it all', async () => {
  // The child's stdout is a pipe the parent reads only after the child has asked to end: the stream queues past
  // the pipe's 64 KB, and every byte of the 1 MB arrives, then the exit code the command set.
  const c = child(`const text = 'y'.repeat(1 << 20);
for (let i = 0; i < text.length; i += 8192) s.writeStdout(text.slice(i, i + 8192));
const flushed = s.stdioFlushed();
process.exitCode = 4;
s.writeStderr(JSON.stringify({ flushed }) + '\\n');
s.exitIfFlushed();`);
  let stderr = '';
  const report = new Promise<{ flushed: boolean }>((resolve) => {
    c.stderr!.on('data', (d: Buffer) => {
      stderr += d;
      if (stderr.includes('\n')) resolve(JSON.parse(stderr) as { flushed: boolean });
    });
  });
  assert.deepEqual(await report, { flushed: false });
  let stdout = '';
  c.stdout!.on('data', (d: Buffer) => (stdout += d));
  const code = await new Promise((resolve) => c.on('close', resolve));
  assert.equal(code, 4);
  assert.equal(stdout.length, 1 << 20);
  assert.ok(/^y+$/.test(stdout));
});

test('isTerminal: a pipe, a file and /dev/null are not terminals', () => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import { isTerminal } from ${JSON.stringify(STDIO)}; process.stderr.write(JSON.stringify([isTerminal(0), isTerminal(1), isTerminal(99)]));`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(r.stderr), [false, false, false]);
});

test('podctl --version, --help and validate make neither process.stdout nor process.stderr: they write to the descriptors', () => {
  // Node's list of the modules it loaded: a stream for a pipe loads net, for a file sync_write_stream, for a terminal tty (the preload itself loads stream).
  const list = `data:text/javascript,import { writeSync } from 'node:fs'; process.on('exit', () => writeSync(2, process.moduleLoadList.join('\\n')))`;
  for (const args of [['--version'], ['--help'], ['validate', join(ROOT, 'examples/hello.yaml')]]) {
    const r = spawnSync(process.execPath, ['--import', list, join(ROOT, 'bin/run.js'), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.length > 0, args.join(' '));
    const loaded = r.stderr.split('\n');
    assert.ok(loaded.includes('NativeModule fs'), 'the preload lists what Node loaded');
    assert.deepEqual(loaded.filter((m) => /^NativeModule (net|tty|internal\/fs\/sync_write_stream)$/.test(m)), [], args.join(' '));
  }
});
