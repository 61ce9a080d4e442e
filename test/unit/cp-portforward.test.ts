import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { receive } from '../../src/cli/cp-receive.js';
import { copyFromPod, localFsError, parseLocation } from '../../src/cli/cp.js';
import type { CriClient } from '../../src/core/cri/client.js';
import { PodctlError } from '../../src/core/errors.js';
import { EXEC_PROTOCOL } from '../../src/core/exec/stream.js';
import { forwardConnection, parsePortSpec, PORTFORWARD_PROTOCOL } from '../../src/core/exec/portforward.js';
import { Extraction, FRAME_HEAD, packLocal, TarError } from '../../src/core/exec/tar.js';
import { pack, type Pack } from 'tar-stream';

function scratch(): { dir: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-cp-'));
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An archive of these entries, made with tar-stream's pack (a file's data as a string or Buffer). */
async function craft(entries: (Parameters<Pack['entry']>[0] & { data?: string | Buffer })[]): Promise<Buffer> {
  const p = pack();
  for (const { data, ...header } of entries) {
    if (data !== undefined) p.entry(header, data);
    else p.entry(header);
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/** Unpacks `archive` under `dest` as cp does, written in small chunks with backpressure; the staging directory removed after. */
async function unpack(archive: Buffer, dest: string, rename?: { from: string; to: string }): Promise<void> {
  const x = await Extraction.open(dest, rename);
  try {
    for (let off = 0; off < archive.length; off += 7000) {
      if (!x.input.write(archive.subarray(off, off + 7000))) await once(x.input, 'drain');
    }
    await x.finish();
  } finally {
    await x.discard();
  }
}

/** packLocal's archive: each frame's bytes after its head, copied, since the next frame may reuse it. */
async function readFrames(frames: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const f of frames) chunks.push(Buffer.from(f.subarray(FRAME_HEAD)));
  return Buffer.concat(chunks);
}

const refusedWith = (pattern: RegExp) => (e: Error) => e instanceof TarError && pattern.test(e.message);

test(
  'tar: a local tree packed as cp sends it (its announced size exact) and unpacked elsewhere, renamed at the top: long and ' +
    'non-ASCII names, long symlink targets, binary data',
  async () => {
    const s = scratch();
    try {
      const src = join(s.dir, 'src');
      const long = 'n'.repeat(150);
      mkdirSync(join(src, 'sub', 'ünïcödé 日本'), { recursive: true });
      const data = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
      writeFileSync(join(src, 'sub', 'f.txt'), 'hello');
      writeFileSync(join(src, 'sub', 'ünïcödé 日本', long), data);
      writeFileSync(join(src, 'empty'), '');
      symlinkSync('sub/f.txt', join(src, 'rel'));
      const longTarget = `sub/${'../sub/'.repeat(20)}f.txt`;
      symlinkSync(longTarget, join(src, 'longlink'));
      const packed = await packLocal(src, 'top');
      const archive = await readFrames(packed.frames());
      assert.equal(archive.length, packed.size, "the size head -c is given is the archive's");
      // What GNU tar reads of it, as the container's tar would.
      const listed = spawnSync('tar', ['tf', '-'], { input: archive, encoding: 'utf8' });
      assert.equal(listed.status, 0, listed.stderr);
      assert.ok(listed.stdout.split('\n').includes(`top/sub/ünïcödé 日本/${long}`), listed.stdout);

      const out = join(s.dir, 'out');
      mkdirSync(out);
      await unpack(archive, out, { from: 'top', to: 'renamed' });
      assert.equal(readFileSync(join(out, 'renamed', 'sub', 'f.txt'), 'utf8'), 'hello');
      assert.ok(readFileSync(join(out, 'renamed', 'sub', 'ünïcödé 日本', long)).equals(data));
      assert.equal(readFileSync(join(out, 'renamed', 'empty'), 'utf8'), '');
      assert.equal(readlinkSync(join(out, 'renamed', 'rel')), 'sub/f.txt');
      assert.equal(readlinkSync(join(out, 'renamed', 'longlink')), longTarget);
      assert.deepEqual(readdirSync(out), ['renamed'], 'no staging directory left behind');
    } finally {
      s.done();
    }
  },
);

test('tar: an archive GNU tar writes in pax format (long names, pax path records) is read as GNU tar wrote it', async (t) => {
  if (spawnSync('tar', ['--version']).status !== 0) return t.skip('no tar here');
  const s = scratch();
  try {
    const deep = join('top', 'd'.repeat(120), 'é'.repeat(40));
    mkdirSync(join(s.dir, 'src', deep), { recursive: true });
    writeFileSync(join(s.dir, 'src', deep, 'f'), 'pax');
    const made = spawnSync('tar', ['--format=pax', '-cf', '-', '-C', join(s.dir, 'src'), 'top']);
    assert.equal(made.status, 0, String(made.stderr));
    const out = join(s.dir, 'out');
    mkdirSync(out);
    await unpack(made.stdout, out);
    assert.equal(readFileSync(join(out, deep, 'f'), 'utf8'), 'pax');
  } finally {
    s.done();
  }
});

test(
  'tar: files keep only their permission bits less the umask (no setuid, setgid or sticky), directories are 0755 less ' + 'the umask',
  async () => {
    const s = scratch();
    const umask = process.umask(0o027);
    try {
      const dest = join(s.dir, 'dest');
      mkdirSync(dest);
      await unpack(
        await craft([
          { name: 'd/', type: 'directory', mode: 0o7777 },
          { name: 'd/suid', type: 'file', mode: 0o4755, data: 'x' },
          { name: 'd/sgid', type: 'file', mode: 0o2775, data: 'x' },
          { name: 'd/sticky', type: 'file', mode: 0o1666, uid: 0, gid: 0, data: 'x' },
          { name: 'd/ro', type: 'file', mode: 0o444, data: 'read only' },
        ]),
        dest,
      );
      const mode = (p: string) => statSync(join(dest, p)).mode & 0o7777;
      assert.equal(mode('d'), 0o750);
      assert.equal(mode('d/suid'), 0o750);
      assert.equal(mode('d/sgid'), 0o750);
      assert.equal(mode('d/sticky'), 0o640);
      assert.equal(mode('d/ro'), 0o440);
      assert.equal(readFileSync(join(dest, 'd/ro'), 'utf8'), 'read only');
      // Owned by whoever ran the copy, whatever the archive says.
      assert.equal(statSync(join(dest, 'd/sticky')).uid, process.getuid!());
    } finally {
      process.umask(umask);
      s.done();
    }
  },
);

test(
  'tar: entries that would escape the destination, device nodes and FIFOs are refused, and nothing of the archive ' + 'is written',
  async () => {
    const s = scratch();
    try {
      const dest = join(s.dir, 'dest');
      mkdirSync(dest);
      const file = (name: string) => ({ name, type: 'file' as const, mode: 0o644, data: 'x' });
      const refused = async (entries: Parameters<typeof craft>[0], pattern: RegExp) => {
        await assert.rejects(unpack(await craft([file('ok'), ...entries]), dest), refusedWith(pattern), pattern.source);
        assert.deepEqual(readdirSync(dest), [], `nothing written for ${pattern.source}`);
      };
      await refused([file('../x')], /refusing archive entry "\.\.\/x": it would be written outside/);
      await refused([file('a/../../x')], /outside/);
      await refused([file('/etc/x')], /absolute path/);
      await refused([{ name: 'l', type: 'symlink', linkname: '/etc' }], /symlink to the absolute path \/etc/);
      await refused([{ name: 'l', type: 'symlink', linkname: '../..' }], /symlink to \.\.\/\.\., outside/);
      await refused([{ name: 'l', type: 'symlink', linkname: '.' }, file('l/x')], /through the symlink l/);
      await refused(
        [{ name: 'null', type: 'character-device', mode: 0o666, devmajor: 1, devminor: 3 }],
        /"null" is a character device, which podctl cp does not copy/,
      );
      await refused([{ name: 'sda', type: 'block-device', mode: 0o660, devmajor: 8, devminor: 0 }], /"sda" is a block device/);
      await refused([{ name: 'pipe', type: 'fifo', mode: 0o644 }], /"pipe" is a FIFO/);
      await refused(
        [{ name: 'h', type: 'link', linkname: '/etc/passwd' }],
        /a hard link to "\/etc\/passwd", which is not a file earlier in the archive/,
      );
      await refused([{ name: 'h', type: 'link', linkname: '../x' }], /a hard link to "\.\.\/x"/);
      await refused([{ name: 'h', type: 'link', linkname: 'later' }, file('later')], /a hard link to "later"/);
      // A truncated archive: the copy fails whole.
      const whole = await craft([file('ok'), { name: 'big', type: 'file', mode: 0o644, data: Buffer.alloc(10_000, 1) }]);
      await assert.rejects(unpack(whole.subarray(0, 5000), dest), refusedWith(/not a whole tar archive/));
      assert.deepEqual(readdirSync(dest), []);
      assert.equal(existsSync(join(s.dir, 'x')), false);
    } finally {
      s.done();
    }
  },
);

test(
  'tar: a symlink already in the destination that leads out is refused before any directory is made through it (an archive ' +
    'without directory entries)',
  async () => {
    const s = scratch();
    try {
      const dest = join(s.dir, 'dest');
      const outside = join(s.dir, 'outside');
      mkdirSync(dest);
      mkdirSync(outside);
      symlinkSync(outside, join(dest, 'out'));
      await assert.rejects(
        unpack(await craft([{ name: 'out/sub/deeper/x', type: 'file', mode: 0o644, data: 'x' }]), dest),
        refusedWith(/its directory leads outside .* through a symlink/),
      );
      assert.deepEqual(readdirSync(outside), [], 'no directory made outside the destination');
      assert.deepEqual(readdirSync(dest), ['out']);
      // An existing symlink where a file would go is not written through either, and the archive's other files are not written.
      writeFileSync(join(outside, 'victim'), 'keep');
      symlinkSync(join(outside, 'victim'), join(dest, 'f'));
      await assert.rejects(
        unpack(
          await craft([
            { name: 'a', type: 'file', data: 'a' },
            { name: 'f', type: 'file', data: 'evil' },
          ]),
          dest,
        ),
        refusedWith(/is a symlink already/),
      );
      assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'keep');
      assert.deepEqual(readdirSync(dest).sort(), ['f', 'out']);
    } finally {
      s.done();
    }
  },
);

test(
  'tar: a directory merges into an existing one (replacing files there), a symlink to a directory inside is followed, hard ' +
    'links within the archive are kept',
  async () => {
    const s = scratch();
    try {
      const dest = join(s.dir, 'dest');
      mkdirSync(join(dest, 'top', 'real'), { recursive: true });
      writeFileSync(join(dest, 'top', 'old.txt'), 'old');
      writeFileSync(join(dest, 'top', 'same.txt'), 'before');
      symlinkSync('real', join(dest, 'top', 'alias'));
      await unpack(
        await craft([
          { name: 'top/', type: 'directory' },
          { name: 'top/same.txt', type: 'file', data: 'after' },
          { name: 'top/new.txt', type: 'file', data: 'new' },
          { name: 'top/hard', type: 'link', linkname: 'top/new.txt' },
          { name: 'top/alias/in.txt', type: 'file', data: 'via alias' },
          // A later entry of the same name replaces the earlier one, as tar does.
          { name: 'top/twice', type: 'file', data: 'first' },
          { name: 'top/twice', type: 'file', data: 'second' },
        ]),
        dest,
      );
      const read = (p: string) => readFileSync(join(dest, 'top', p), 'utf8');
      assert.equal(read('old.txt'), 'old');
      assert.equal(read('same.txt'), 'after');
      assert.equal(read('new.txt'), 'new');
      assert.equal(statSync(join(dest, 'top', 'hard')).ino, statSync(join(dest, 'top', 'new.txt')).ino);
      assert.equal(read('real/in.txt'), 'via alias');
      assert.equal(read('twice'), 'second');
      assert.deepEqual(readdirSync(dest), ['top']);
    } finally {
      s.done();
    }
  },
);

/**
 * A runtime's exec for copyFromPod: its streaming server (v4.channel.k8s.io) writes `archive` to stdout in 10,000-byte
 * frames, then `stderr` and the status of an exit with `exitCode`; the commands asked for are kept.
 */
async function execServer(
  archive: Buffer,
  exitCode = 0,
  stderr = '',
): Promise<{ client: CriClient; commands: string[][]; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (p) => (p.has(EXEC_PROTOCOL) ? EXEC_PROTOCOL : false) });
  await once(wss, 'listening');
  wss.on('connection', (ws) => {
    for (let off = 0; off < archive.length; off += 10_000) ws.send(Buffer.concat([Buffer.from([1]), archive.subarray(off, off + 10_000)]));
    if (stderr) ws.send(Buffer.concat([Buffer.from([2]), Buffer.from(stderr)]));
    const status =
      exitCode === 0
        ? { status: 'Success' }
        : { status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] } };
    ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]));
    ws.close();
  });
  const commands: string[][] = [];
  const { port } = wss.address() as AddressInfo;
  const client = {
    exec: async (req: { cmd: string[] }) => {
      commands.push(req.cmd);
      return { url: `ws://127.0.0.1:${port}/exec/x` };
    },
  } as unknown as CriClient;
  return { client, commands, close: () => new Promise((r) => wss.close(() => r())) };
}

test(
  'cp from a pod (received in its worker): the archive is unpacked under its new name; a refused entry and a failed tar are ' +
    "said as cp's errors and write nothing",
  async () => {
    const s = scratch();
    const big = Buffer.alloc(300_000, 'x');
    const ok = await execServer(await craft([{ name: 'logs/app.log', type: 'file', mode: 0o644, data: big }]));
    try {
      await copyFromPod(ok.client, 'c1', '/var/logs/', join(s.dir, 'copy'));
      assert.deepEqual(ok.commands, [['tar', 'cf', '-', '-C', '/var', 'logs']]);
      assert.deepEqual(readFileSync(join(s.dir, 'copy', 'app.log')), big);
      assert.deepEqual(readdirSync(s.dir), ['copy'], 'no staging directory left');
    } finally {
      await ok.close();
    }

    const dest = join(s.dir, 'into');
    mkdirSync(dest);
    const fifo = await execServer(
      await craft([
        { name: 'd/ok', type: 'file', data: 'ok' },
        { name: 'd/pipe', type: 'fifo' },
      ]),
    );
    try {
      await assert.rejects(
        copyFromPod(fifo.client, 'c1', '/d', dest),
        (e: Error) => e instanceof PodctlError && /^cp: archive entry "d\/pipe" is a FIFO/.test(e.message),
      );
      assert.deepEqual(readdirSync(dest), [], 'nothing written');
    } finally {
      await fifo.close();
    }

    const failed = await execServer(Buffer.alloc(0), 1, "tar: /nope: can't open: No such file or directory\n");
    try {
      await assert.rejects(
        copyFromPod(failed.client, 'c1', '/nope', dest),
        (e: Error) =>
          e instanceof PodctlError && e.message === "cp: tar in the container exited 1: tar: /nope: can't open: No such file or directory",
      );
      assert.deepEqual(readdirSync(dest), [], 'nothing written');
    } finally {
      await failed.close();
      s.done();
    }
  },
);

test("cp from a pod to where this host's filesystem refuses: said as cp's error on the local path, not as an unexpected error", async () => {
  const s = scratch();
  const file = join(s.dir, 'notes.txt');
  writeFileSync(file, 'kept');
  const server = await execServer(await craft([{ name: 'app.log', type: 'file', data: 'x' }]));
  try {
    // A file where the copy's directory belongs: refused before the pod is asked for anything.
    await assert.rejects(
      copyFromPod(server.client, 'c1', '/var/app.log', join(file, 'app.log')),
      (e: Error) => e instanceof PodctlError && e.message === `cp: ${file}: not a directory`,
    );
    assert.deepEqual(server.commands, []);
    // The worker's own refusal by the filesystem (its staging directory cannot be made there).
    const answer = await receive({ url: 'ws://127.0.0.1:1/unused', destDir: file });
    assert.deepEqual(answer, { refused: { message: `cp: ${file}: not a directory (ENOTDIR)`, hint: undefined, exitCode: 1 } });
    assert.equal(readFileSync(file, 'utf8'), 'kept');
  } finally {
    await server.close();
    s.done();
  }
  // A full disk as Node reports it (/dev/full answers every write with ENOSPC).
  let full: unknown;
  try {
    writeFileSync('/dev/full', 'x');
  } catch (err) {
    full = err;
  }
  assert.equal(localFsError(full, '/data')?.message, 'cp: /data: no space left on device (ENOSPC)');
  // A socket's failure is not the local filesystem's: it stays an unexpected error.
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
  assert.equal(localFsError(reset, '/data'), undefined);
});

test('cp arguments: POD:PATH and NS/POD:PATH are remote; local paths (with or without a colon) are not', () => {
  assert.deepEqual(parseLocation('web:/tmp/a'), { namespace: undefined, pod: 'web', path: '/tmp/a' });
  assert.deepEqual(parseLocation('team/web:/tmp/a'), { namespace: 'team', pod: 'web', path: '/tmp/a' });
  assert.deepEqual(parseLocation('./a:b'), { path: './a:b' });
  assert.deepEqual(parseLocation('/abs/path'), { path: '/abs/path' });
  assert.throws(() => parseLocation('web:'), /no path after the pod name/);
});

test('port-forward specs: [LOCAL:]REMOTE, :REMOTE and 0:REMOTE for a random port; bad ones name what is wrong', () => {
  assert.deepEqual(parsePortSpec('8080'), { local: 8080, remote: 8080 });
  assert.deepEqual(parsePortSpec('18080:8080'), { local: 18080, remote: 8080 });
  assert.deepEqual(parsePortSpec(':8080'), { local: 0, remote: 8080 });
  assert.deepEqual(parsePortSpec('0:8080'), { local: 0, remote: 8080 });
  assert.throws(() => parsePortSpec('8080:0'), /remote port must be 1-65535/);
  assert.throws(() => parsePortSpec('70000:80'), /local port must be 0-65535/);
  assert.throws(() => parsePortSpec('http'), /expected \[LOCAL:\]REMOTE/);
});

test('port-forward stream: the port in the query, the port prefix frames skipped, data both ways, the error channel reported', async () => {
  // A stand-in for the runtime's streaming server: echoes upper-cased data, or fails on port 9.
  const wss = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    handleProtocols: (p) => (p.has(PORTFORWARD_PROTOCOL) ? PORTFORWARD_PROTOCOL : false),
  });
  const queries: string[] = [];
  wss.on('connection', (ws, req) => {
    const port = Number(new URL(req.url!, 'http://x').searchParams.get('port'));
    queries.push(req.url!);
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port);
    ws.send(Buffer.concat([Buffer.from([0]), prefix]));
    ws.send(Buffer.concat([Buffer.from([1]), prefix]));
    if (port === 9) {
      ws.send(Buffer.concat([Buffer.from([1]), Buffer.from('failed to connect to localhost:9 inside namespace')]));
      ws.close();
      return;
    }
    ws.on('message', (d: Buffer) => {
      ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(d.subarray(1).toString().toUpperCase())]));
      ws.close();
    });
  });
  await new Promise((r) => wss.once('listening', r));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/portforward/tok`;
  const local = createServer({ allowHalfOpen: true }, (socket) => {
    forwardConnection(url, 8080, socket).catch(() => undefined);
  });
  await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
  try {
    const reply = await new Promise<string>((resolve, reject) => {
      const c = createConnection((local.address() as AddressInfo).port, '127.0.0.1');
      let got = '';
      c.on('data', (d) => (got += d.toString()));
      c.on('end', () => resolve(got));
      c.on('error', reject);
      c.end('ping');
    });
    assert.equal(reply, 'PING');
    assert.deepEqual(queries, ['/portforward/tok?port=8080']);

    const { PassThrough } = await import('node:stream');
    await assert.rejects(forwardConnection(url, 9, new PassThrough()), /failed to connect to localhost:9/);
  } finally {
    local.close();
    wss.close();
  }
});
