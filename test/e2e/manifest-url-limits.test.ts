import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir, startPodctl, type RunningPodctl } from '../support/e2e.js';

/**
 * watch --manifest-url against two local servers: A serves the manifests, B (another port, so
 * another origin) is where a hostile redirect points. Everything is on 127.0.0.1.
 */
let client: CriClient;
const dir = scratchDir('e2e-manifest-url');
let a: Server;
let b: Server;
let aURL = '';
let bURL = '';
let serveA: (req: IncomingMessage, res: ServerResponse) => void = (_q, r) => void r.writeHead(503).end();
const keysAtA: (string | undefined)[] = [];
const keysAtB: (string | undefined)[] = [];
let watch: RunningPodctl | undefined;

const pod = (name: string, command: string[]) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: ${JSON.stringify(command)}}\n`;

const listen = async (s: Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

async function runningApp(name: string): Promise<{ id: string } | undefined> {
  const list = await client.listContainers({
    labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE, [CONTAINER_NAME_LABEL]: 'app' },
  });
  return list.find((c) => c.state === 'CONTAINER_RUNNING');
}
const sandboxes = async (name: string) =>
  client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  a = createServer((req, res) => {
    keysAtA.push(req.headers['x-api-key'] as string | undefined);
    serveA(req, res);
  });
  b = createServer((req, res) => {
    keysAtB.push(req.headers['x-api-key'] as string | undefined);
    res.writeHead(200).end(pod('from-b', ['sleep', '3600']));
  });
  aURL = await listen(a);
  bURL = await listen(b);
});

after(async () => {
  if (watch) {
    watch.kill('SIGKILL');
    await watch.done;
  }
  a.close();
  b.close();
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test(
  'watch --manifest-url: add, change, server down, remove; a redirect to another origin and an oversize body keep the last ' + 'good pods',
  async () => {
    let body = pod('url-web', ['sleep', '3600']);
    serveA = (_req, res) => void res.writeHead(200).end(body);
    watch = startPodctl([
      'watch',
      '--manifest-url',
      `${aURL}/pods.yaml`,
      '--manifest-url-header',
      'X-Api-Key: k3y',
      '--http-check-frequency',
      '1s',
      '--manifest-url-max-size',
      '64Ki',
      '--root-dir',
      join(dir.dir, 'root'),
      '--log-root',
      join(dir.dir, 'logs'),
    ]);
    const first = await eventually('url-web running', () => runningApp('url-web'), 90_000);
    assert.ok(keysAtA.includes('k3y'), 'the header was sent to the URL');

    // Changed: the container is replaced.
    body = pod('url-web', ['sh', '-c', 'sleep 3600']);
    const second = await eventually(
      'url-web replaced',
      async () => {
        const c = await runningApp('url-web');
        return c && c.id !== first.id ? c : undefined;
      },
      90_000,
    );

    // Server down for a while: the pod stays as it is.
    serveA = (req) => req.socket.destroy();
    await eventually(
      'the fetch failure reported',
      async () => (/url-web|pods\.yaml/.test(watch!.stderr()) && /keeping the last good pods/.test(watch!.stderr()) ? true : undefined),
      30_000,
    );
    assert.equal((await runningApp('url-web'))?.id, second.id, 'nothing restarted while the server was down');

    // A redirect to another origin: refused, the header never reaches B, B's pod never appears.
    serveA = (_req, res) => void res.writeHead(302, { location: `${bURL}/pods.yaml` }).end();
    await eventually(
      'the redirect refused',
      async () => (/refusing the redirect to http:\/\/127\.0\.0\.1:\d+\/pods\.yaml/.test(watch!.stderr()) ? true : undefined),
      30_000,
    );
    // An oversize body: refused too.
    serveA = (_req, res) => void res.writeHead(200).end(`${body}# ${'x'.repeat(200 * 1024)}\n`);
    await eventually(
      'the oversize body refused',
      async () => (/over the limit of 65536 bytes/.test(watch!.stderr()) ? true : undefined),
      30_000,
    );
    assert.deepEqual(keysAtB, [], 'the other origin was never contacted');
    assert.deepEqual(await sandboxes('from-b'), []);
    assert.equal((await runningApp('url-web'))?.id, second.id, 'the last good pods still run, unchanged');

    // Back, without the pod: it is removed.
    serveA = (_req, res) => void res.writeHead(200).end('');
    await eventually('url-web removed', async () => ((await sandboxes('url-web')).length === 0 ? true : undefined), 90_000);

    watch.kill('SIGTERM');
    await watch.done;
    watch = undefined;
  },
);
