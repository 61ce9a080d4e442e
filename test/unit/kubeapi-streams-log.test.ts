import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { IContainerStatus, IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { servePodLog } from '../../src/core/kubeapi/streams/index.js';
import { scratchDir } from '../support/e2e.js';

const scratch = scratchDir('kubeapi-log');
const dir = scratch.dir;
/** Container ID → [its log file, whether it runs]. */
const containers = new Map<string, { logPath: string; running: boolean }>();

const stamp = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().replace('Z', '000000Z');
const criLine = (msAgo: number, text: string, stream = 'stdout') => `${stamp(msAgo)} ${stream} F ${text}\n`;

function running(name: string, id: string, restartCount = 0, lastId?: string): IContainerStatus {
  return {
    name,
    ready: true,
    restartCount,
    image: 'busybox',
    imageID: '',
    containerID: `containerd://${id}`,
    state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
    ...(lastId ? { lastState: { terminated: { exitCode: 1, containerID: `containerd://${lastId}` } } } : {}),
  };
}

function pod(names: string[], statuses: IContainerStatus[], annotations?: Record<string, string>): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u1', ...(annotations ? { annotations } : {}) },
    spec: { containers: names.map((name) => ({ name, image: 'busybox' })) },
    status: { phase: 'Running', containerStatuses: statuses },
  } as IPod;
}

let current: IPod;
let server: Server;
let base: string;

before(async () => {
  for (const [id, c, n, text] of [
    ['a0', 'app', 0, 'app-first'],
    ['a1', 'app', 1, 'app-second'],
    ['s0', 'side', 0, 'side-only'],
  ] as const) {
    mkdirSync(join(dir, c), { recursive: true });
    const logPath = join(dir, c, `${n}.log`);
    writeFileSync(logPath, [1, 2, 3, 4, 5, 6].map((i) => criLine(60_000 - i * 1000, `${text} ${i}`)).join(''));
    containers.set(id, { logPath, running: id !== 'a0' });
  }
  // Two lines of the second app instance are recent: --since 10s keeps only them.
  appendFileSync(containers.get('a1')!.logPath, criLine(2000, 'app-second recent 1') + criLine(1000, 'app-second recent 2', 'stderr'));
  const cri = {
    containerStatus: async (id: string) => {
      const c = containers.get(id);
      if (!c) throw new Error(`no container ${id}`);
      return { status: { id, logPath: c.logPath, state: c.running ? 'CONTAINER_RUNNING' : 'CONTAINER_EXITED' } };
    },
  } as unknown as CriClient;
  server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    void servePodLog(req, res, url, { pod: current, cri });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/namespaces/default/pods/web/log`;
});

after(() => {
  server.close();
  scratch.cleanup();
});

function fetchLog(query: string): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    get(`${base}${query}`, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, type: String(res.headers['content-type']) }));
    }).on('error', reject);
  });
}

const lines = (body: string) => body.split('\n').filter(Boolean);

describe('pods/log', () => {
  test('the only container by default; the annotation over the rule; several and none named is a 400', async () => {
    current = pod(['app'], [running('app', 'a1', 1, 'a0')]);
    const r = await fetchLog('');
    assert.equal(r.status, 200);
    assert.match(r.type, /^text\/plain/);
    assert.equal(lines(r.body)[0], 'app-second 1');
    current = pod(['app', 'side'], [running('app', 'a1', 1, 'a0'), running('side', 's0')], {
      'kubectl.kubernetes.io/default-container': 'side',
    });
    assert.deepEqual(lines((await fetchLog('?tailLines=1')).body), ['side-only 6']);
    current = pod(['app', 'side'], [running('app', 'a1', 1, 'a0'), running('side', 's0')]);
    const none = await fetchLog('');
    assert.equal(none.status, 400);
    assert.equal(JSON.parse(none.body).message, 'a container name must be specified for pod web, choose one of: [app side]');
    assert.deepEqual(lines((await fetchLog('?container=side&tailLines=2')).body), ['side-only 5', 'side-only 6']);
  });

  test('tailLines, sinceSeconds, sinceTime, timestamps and limitBytes', async () => {
    current = pod(['app'], [running('app', 'a1', 1, 'a0')]);
    assert.deepEqual(lines((await fetchLog('?tailLines=3')).body), ['app-second 6', 'app-second recent 1', 'app-second recent 2']);
    assert.deepEqual(lines((await fetchLog('?sinceSeconds=10')).body), ['app-second recent 1', 'app-second recent 2']);
    const since = new Date(Date.now() - 10_000).toISOString();
    assert.deepEqual(lines((await fetchLog(`?sinceTime=${since}`)).body), ['app-second recent 1', 'app-second recent 2']);
    const stamped = lines((await fetchLog('?tailLines=1&timestamps=true')).body)[0]!;
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z app-second recent 2$/);
    assert.equal((await fetchLog('?limitBytes=14')).body, 'app-second 1\na');
  });

  test('previous: the instance before the last restart, or the kubelet message when there is none', async () => {
    current = pod(['app'], [running('app', 'a1', 1, 'a0')]);
    assert.deepEqual(lines((await fetchLog('?previous=true&tailLines=2')).body), ['app-first 5', 'app-first 6']);
    current = pod(['app'], [running('app', 'a0')]);
    const r = await fetchLog('?previous=true');
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.body).message, 'previous terminated container "app" in pod "web" not found');
  });

  test('bad options: 422 naming each field, a container not of the pod 400', async () => {
    current = pod(['app'], [running('app', 'a1', 1, 'a0')]);
    const r = await fetchLog('?tailLines=-1&sinceSeconds=0');
    assert.equal(r.status, 422);
    const status = JSON.parse(r.body);
    assert.equal(status.reason, 'Invalid');
    assert.equal(
      status.message,
      'PodLogOptions "web" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, ' +
        'sinceSeconds: Invalid value: 0: must be greater than 0]',
    );
    assert.equal(JSON.parse((await fetchLog('?container=db')).body).message, 'container db is not valid for pod web');
    assert.equal((await fetchLog('?tailLines=x')).status, 400);
  });

  test('follow: lines appended meanwhile arrive, and the answer ends once the container stops running', async () => {
    current = pod(['app'], [running('app', 's0')]);
    const log = containers.get('s0')!;
    const body = await new Promise<string>((resolve, reject) => {
      get(`${base}?follow=true&tailLines=1`, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d.toString();
          if (text === 'side-only 6\n') appendFileSync(log.logPath, criLine(0, 'appended 1'));
          if (text.endsWith('appended 1\n')) log.running = false;
        });
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    assert.equal(body, 'side-only 6\nappended 1\n');
  });
});
