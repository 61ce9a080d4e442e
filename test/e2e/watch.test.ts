import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-watch');
const manifests = join(dir.dir, 'manifests');
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

function podYaml(name: string, command: string[]): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: ${JSON.stringify(command)}\n  - name: side\n    image: busybox:1.36\n    command: ["sleep", "3600"]\n`;
}

async function containers(name: string) {
  return client.listContainers({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function startWatch(): { child: ChildProcess; output: () => string; stop: () => Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'watch', manifests, '--root-dir', join(dir.dir, 'root'), '--log-root', join(dir.dir, 'logs'), '--file-check-frequency', '1s', '--pleg-relist-period', '200ms'], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test('watch follows the directory: add starts, edit replaces one container, restart adopts, delete removes', async () => {
  let w = startWatch();
  try {
    const file = join(manifests, 'w1.yaml');
    writeFileSync(file, podYaml('w1', ['sleep', '3600']));
    const running = (list: Awaited<ReturnType<typeof containers>>) => list.filter((c) => c.state === 'CONTAINER_RUNNING');
    const first = await eventually('w1 to run', async () => {
      const list = running(await containers('w1'));
      return list.length === 2 ? list : undefined;
    });
    const idOf = (list: typeof first, name: string) => list.find((c) => c.metadata?.name === name)!.id;

    writeFileSync(file, podYaml('w1', ['sleep', '7200']));
    const edited = await eventually('app to be replaced', async () => {
      const list = running(await containers('w1'));
      return list.length === 2 && idOf(list, 'app') !== idOf(first, 'app') ? list : undefined;
    });
    assert.equal(idOf(edited, 'side'), idOf(first, 'side'), 'the other container is untouched');

    // A watch stopped and started again adopts what runs and restarts nothing.
    assert.equal(await w.stop(), 0, w.output());
    assert.match(w.output(), /pods keep running/);
    w = startWatch();
    await eventually('the new watch to report the pod', async () => (/podctl-e2e\/w1\s+Running/.test(w.output()) ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(running(await containers('w1')).map((c) => c.id).sort(), edited.map((c) => c.id).sort());

    rmSync(file);
    await eventually('w1 to be removed', async () => ((await containers('w1')).length === 0 ? true : undefined));
    assert.equal((await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'w1' } })).length, 0);
    assert.match(w.output(), /podctl-e2e\/w1\s+terminated and removed/);
  } finally {
    await w.stop();
  }
});
