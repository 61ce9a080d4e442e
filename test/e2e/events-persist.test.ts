import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import {
  E2E_NAMESPACE,
  e2eClient,
  eventually,
  podctl,
  removeE2EPods,
  scratchDir,
  startPodctl,
  type RunningPodctl,
} from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-events-persist');
const root = join(dir.dir, 'root');
const logs = join(dir.dir, 'logs');
const manifests = join(dir.dir, 'manifests');
const running = new Set<RunningPodctl>();

interface V1Event {
  reason: string;
  count: number;
  firstTimestamp: string;
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests, { recursive: true });
});

after(async () => {
  for (const w of running) {
    w.kill('SIGKILL');
    await w.done;
  }
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

function startWatch(): RunningPodctl {
  const w = startPodctl(['watch', manifests, '--root-dir', root, '--log-root', logs]);
  running.add(w);
  return w;
}

async function stopWatch(w: RunningPodctl): Promise<void> {
  w.kill('SIGTERM'); // pods keep running
  await w.done;
  running.delete(w);
}

const backOffs = (): V1Event[] | undefined => {
  const r = podctl(['events', '--for', 'pod/crashloop', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', root]);
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.stdout) as { items: V1Event[] }).items.filter((e) => e.reason === 'BackOff');
};

test('after an agent restart, describe still lists the BackOff events from before it, and the Last State', async () => {
  writeFileSync(
    join(manifests, 'crashloop.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: crashloop, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sh, -c, "echo bye; exit 3"]}\n`,
  );
  const first = startWatch();
  const before = await eventually(
    'a BackOff event from the first agent',
    async () => (backOffs()?.length ? backOffs() : undefined),
    90_000,
  );
  const restartedAt = Date.now();
  await stopWatch(first);

  startWatch();
  // The new agent answers on the socket (its events), and the old BackOff row is among them.
  const after = await eventually(
    "the first agent's BackOff event, served by the second",
    async () => {
      const list = backOffs();
      return list?.some((e) => Date.parse(e.firstTimestamp) < restartedAt) ? list : undefined;
    },
    60_000,
  );
  assert.equal(
    Date.parse(after[0]!.firstTimestamp),
    Date.parse(before[0]!.firstTimestamp),
    'the same event, first seen before the restart',
  );

  const described = await eventually(
    'describe with Last State',
    async () => {
      const d = podctl(['describe', 'pod', 'crashloop', '-n', E2E_NAMESPACE, '--root-dir', root]);
      return d.code === 0 && /Last State:\s+Terminated/.test(d.stdout) && /BackOff/.test(d.stdout) ? d.stdout : undefined;
    },
    60_000,
  );
  assert.match(described, /Exit Code:\s+3/);
});
