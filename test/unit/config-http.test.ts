import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { HttpSource, type SourceError } from '../../src/core/config/index.js';

let server: Server;
let body = '';
let status = 200;
let seenHeader: string | undefined;
let url = '';

const POD = (cmd: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [${cmd}]}\n`;

before(async () => {
  server = createServer((req, res) => {
    seenHeader = req.headers.authorization;
    res.writeHead(status).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods.yaml`;
});
after(() => server.close());

test('the HTTP source polls, sends its headers, keeps the last good pods on failure and reports once', async () => {
  const clock = new FakeClock();
  const snapshots: IPod[][] = [];
  const errors: SourceError[] = [];
  const source = new HttpSource({
    url,
    headers: { Authorization: 'Bearer t0ken' },
    nodeName: 'n',
    clock,
    pollMs: 20_000,
    onSnapshot: (p) => snapshots.push(p),
    onError: (e) => errors.push(e),
  });
  body = POD('sleep');
  await source.poll();
  assert.equal(seenHeader, 'Bearer t0ken');
  assert.equal(snapshots.at(-1)![0]!.metadata!.name, 'web');
  const uid = snapshots.at(-1)![0]!.metadata!.uid;

  body = POD('echo');
  await source.poll();
  assert.deepEqual(snapshots.at(-1)![0]!.spec!.containers[0]!.command, ['echo']);
  assert.equal(snapshots.at(-1)![0]!.metadata!.uid, uid, 'same URL and name: same UID');
  assert.equal(snapshots.at(-1)![0]!.metadata!.annotations!['kubernetes.io/config.source'], 'http');

  status = 500;
  await source.poll();
  await source.poll();
  assert.equal(errors.length, 1, 'one report for one failure');
  assert.ok(errors[0]!.message.startsWith(`${url}: HTTP 500`), errors[0]!.message);
  assert.deepEqual(snapshots.at(-1)![0]!.spec!.containers[0]!.command, ['echo'], 'the last good pods stand');

  status = 200;
  body = 'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n';
  await source.poll();
  assert.match(errors[1]!.message, /document 1 \(Pod "web"\): spec\.containers: required/);
  assert.deepEqual(snapshots.at(-1)![0]!.spec!.containers[0]!.command, ['echo']);
  source.stop();
});
