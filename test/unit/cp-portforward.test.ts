import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { parseLocation } from '../../src/cli/cp.js';
import { forwardConnection, parsePortSpec, PORTFORWARD_PROTOCOL } from '../../src/core/exec/portforward.js';
import { entriesFromPath, extractPlanned, parseTar, planExtract, TarError, writeTar, type TarEntry } from '../../src/core/exec/tar.js';

function scratch(): { dir: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-cp-'));
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('tar: what writeTar packs, parseTar reads back (long names, directories, symlinks, binary data)', () => {
  const long = `d/${'n'.repeat(150)}`;
  const data = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 256));
  const entries: TarEntry[] = [
    { name: 'd/', type: 'directory', mode: 0o755 },
    { name: long, type: 'file', mode: 0o600, data },
    { name: 'd/link', type: 'symlink', mode: 0o777, linkname: 'n' },
  ];
  const back = parseTar(writeTar(entries));
  assert.deepEqual(
    back.map((e) => [e.name, e.type, e.mode, e.linkname || undefined]),
    [
      ['d/', 'directory', 0o755, undefined],
      [long, 'file', 0o600, undefined],
      ['d/link', 'symlink', 0o777, 'n'],
    ],
  );
  assert.ok(back[1]!.data!.equals(data));
  assert.throws(() => parseTar(Buffer.alloc(512, 1)), /bad header checksum/);
});

test('tar: entries that would escape the destination are refused before anything is written', () => {
  const s = scratch();
  try {
    const dest = join(s.dir, 'dest');
    mkdirSync(dest);
    const file = (name: string): TarEntry => ({ name, type: 'file', mode: 0o644, data: Buffer.from('x') });
    const refused = (entries: TarEntry[], pattern: RegExp) => assert.throws(() => planExtract(entries, dest), (e: Error) => e instanceof TarError && pattern.test(e.message));
    refused([file('ok'), file('../x')], /refusing archive entry "\.\.\/x": it would be written outside/);
    refused([file('a/../../x')], /outside/);
    refused([file('/etc/x')], /absolute path/);
    refused([{ name: 'l', type: 'symlink', mode: 0o777, linkname: '/etc' }], /symlink to the absolute path \/etc/);
    refused([{ name: 'l', type: 'symlink', mode: 0o777, linkname: '../..' }], /symlink to \.\.\/\.\., outside/);
    refused([{ name: 'l', type: 'symlink', mode: 0o777, linkname: '.' }, file('l/x')], /through the symlink l/);
    // Nothing of the refused archives was written.
    assert.deepEqual(readdirSync(dest), []);
    assert.equal(existsSync(join(s.dir, 'x')), false);

    // A symlink already in the destination that leads out is not followed either.
    const outside = join(s.dir, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(dest, 'out'));
    assert.throws(() => extractPlanned(planExtract([file('out/x')], dest), dest), /leads outside/);
    assert.deepEqual(readdirSync(outside), []);
  } finally {
    s.done();
  }
});

test('tar: a local tree packed and unpacked elsewhere, renamed at the top (cp POD:/a local/b)', () => {
  const s = scratch();
  try {
    const src = join(s.dir, 'src');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(src, 'sub', 'f.txt'), 'hello');
    symlinkSync('sub/f.txt', join(src, 'rel'));
    const archive = writeTar(entriesFromPath(src, 'top'));
    const out = join(s.dir, 'out');
    mkdirSync(out);
    extractPlanned(planExtract(parseTar(archive), out, { from: 'top', to: 'renamed' }), out);
    assert.equal(readFileSync(join(out, 'renamed', 'sub', 'f.txt'), 'utf8'), 'hello');
    assert.equal(readlinkSync(join(out, 'renamed', 'rel')), 'sub/f.txt');
  } finally {
    s.done();
  }
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
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (p) => (p.has(PORTFORWARD_PROTOCOL) ? PORTFORWARD_PROTOCOL : false) });
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
