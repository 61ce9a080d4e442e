import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { AgentClient, AgentRequestError } from '../../src/core/node/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir } from '../support/e2e.js';

/**
 * The agent's applied files (issue findings 2, 3 and 5): a file name cannot add documents to them,
 * a pod name never becomes a path outside them, and one that cannot be read at start keeps its pod.
 */
let client: CriClient;
const NS = E2E_NAMESPACE;
const scratch = scratchDir('e2e-secapplied');
const dir = realpathSync(scratch.dir);

const pod = (name: string, extra = '') =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]${extra}}\n`;
/** A file name that, written raw after the applied file's "#", would end the comment and add a privileged pod. */
const injecting = `p\n---\n${pod('intruder', ', securityContext: {privileged: true}')}---\n#.yaml`;

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  for (const root of ['inject', 'names', 'corrupt']) podctl(['agent', 'stop', '--root-dir', join(dir, root)]);
  await removeE2EPods(client);
  client.close();
  scratch.cleanup();
});

function setup(name: string): { root: string; args: string[] } {
  const root = join(dir, name);
  return { root, args: ['--root-dir', root, '--log-root', join(dir, `${name}-logs`)] };
}

async function sandboxesOf(name: string) {
  return client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: NS } });
}

async function containerIDs(name: string): Promise<string> {
  const cs = await client.listContainers({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: NS } });
  return cs
    .map((c) => `${c.id}:${c.state}`)
    .sort()
    .join();
}

test('a file name with a newline and a Pod in it, through run --detach and POST /v1/pods: exactly the pod of the YAML runs', async () => {
  const { root, args } = setup('inject');
  const file = join(dir, injecting);
  writeFileSync(file, pod('named'));
  const r = podctl(['run', '--detach', '--wait=running', file, ...args]);
  assert.equal(r.code, 0, r.stderr);
  const agent = new AgentClient(root);
  const refs = await agent.apply([{ file: injecting, text: pod('posted') }]);
  assert.deepEqual(
    refs.map((x) => x.name),
    ['posted'],
  );
  assert.deepEqual(readdirSync(join(root, 'applied')).sort(), [`${NS}_named.yaml`, `${NS}_posted.yaml`]);
  for (const f of readdirSync(join(root, 'applied'))) {
    const lines = readFileSync(join(root, 'applied', f), 'utf8').split('\n');
    assert.match(
      lines[0]!,
      /^# handed to the podctl agent from "(\/[^"]*\/)?p\\n---\\napiVersion.*#\.yaml"$/,
      'the name escaped on the comment line',
    );
    assert.doesNotMatch(lines.slice(1).join('\n'), /intruder|privileged/);
  }
  await eventually('posted running', async () => ((await containerIDs('posted')).includes('CONTAINER_RUNNING') ? true : undefined), 60_000);
  assert.deepEqual((await agent.pods()).map((p) => p.metadata?.name).sort(), ['named', 'posted']);
  assert.equal((await sandboxesOf('intruder')).length, 0, 'nothing else runs');
  assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
  await removeE2EPods(client);
});

test("delete pod '../../x' -n a, with and without an agent, and DELETE through the socket: the name is invalid and no file is removed", async () => {
  const { root, args } = setup('names');
  const rootArg = ['--root-dir', root];
  const file = join(dir, 'keeper.yaml');
  writeFileSync(file, pod('keeper'));
  // Where <root>/applied/a_../../x.yaml, a_../../../x.yaml and a_../../../../x.yaml lead.
  const canaries = [join(root, 'applied', 'x.yaml'), join(root, 'x.yaml'), join(dir, 'x.yaml')];
  const check = (r: { code: number; stdout: string; stderr: string }, what: string) => {
    assert.equal(r.code, 2, `${what}: ${r.stdout}${r.stderr}`);
    assert.doesNotMatch(r.stdout, /deleted/, what);
    assert.match(r.stderr, /pod name "(\.\.\/)+x" is invalid: expected a DNS-1123 subdomain/, what);
  };
  const attempts = ['../../x', '../../../x', '../../../../x'];

  // No agent yet: its applied dir exists (the keeper handed over, then the agent stopped).
  assert.equal(podctl(['run', '--detach', file, ...args]).code, 0);
  assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
  for (const c of canaries) writeFileSync(c, 'keep me');
  for (const name of attempts) check(podctl(['delete', 'pod', name, '-n', 'a', ...rootArg]), `no agent: ${name}`);

  assert.equal(podctl(['run', '--detach', file, ...args]).code, 0, 'the agent again');
  for (const name of attempts) check(podctl(['delete', 'pod', name, '-n', 'a', ...rootArg]), `agent: ${name}`);
  const agent = new AgentClient(root);
  for (const name of attempts) {
    await assert.rejects(agent.delete('a', name), (err: AgentRequestError) => {
      assert.equal(err.status, 400);
      assert.match(err.message, /pod name ".*" is invalid/);
      return true;
    });
  }
  for (const c of canaries) assert.equal(readFileSync(c, 'utf8'), 'keep me', `${c} removed`);
  assert.equal(existsSync(join(root, 'applied', `${NS}_keeper.yaml`)), true);
  assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
  await removeE2EPods(client);
});

test(
  'a truncated, an empty and an invalid applied file at agent start: the pods keep running with the same containers, each ' +
    'problem named with its file in the log and in describe',
  async () => {
    const { root, args } = setup('corrupt');
    const names = ['cut', 'empty', 'odd'];
    const file = join(dir, 'three.yaml');
    writeFileSync(file, names.map((n) => pod(n)).join('---\n'));
    const r = podctl(['run', '--detach', '--wait=running', file, ...args]);
    assert.equal(r.code, 0, r.stderr);
    const before = await Promise.all(names.map(containerIDs));
    assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
    const applied = (n: string) => join(root, 'applied', `${NS}_${n}.yaml`);
    writeFileSync(applied('cut'), readFileSync(applied('cut'), 'utf8').slice(0, 100));
    writeFileSync(applied('empty'), '');
    writeFileSync(applied('odd'), readFileSync(applied('odd'), 'utf8').replace('spec:', 'bogus: 1\nspec:'));

    // Another pod starts the agent again.
    const other = join(dir, 'other.yaml');
    writeFileSync(other, pod('other'));
    assert.equal(podctl(['run', '--detach', '--wait=running', other, ...args]).code, 0);
    const describe = (n: string) => podctlAsync(['describe', 'pod', n, '-n', NS, '--root-dir', root]);
    for (const n of names) {
      // The event comes with the agent's first housekeeping pass.
      const out = await eventually(
        `describe ${n} showing the problem`,
        async () => {
          const d = await describe(n);
          return d.code === 0 && d.stdout.includes('FailedValidation') ? d.stdout : undefined;
        },
        60_000,
      );
      const events = out.slice(out.indexOf('Events:'));
      assert.match(events, /Warning\s+FailedValidation/);
      assert.ok(events.includes(applied(n)), `${n}: ${events}`);
    }
    // Past several housekeeping passes (2 s each) since the events: still running, the same containers.
    await new Promise((res) => setTimeout(res, 10_000));
    assert.deepEqual(await Promise.all(names.map(containerIDs)), before, 'no container removed, restarted or added');
    const log = readFileSync(join(root, 'agent.log'), 'utf8');
    assert.doesNotMatch(log, /removed \(no source wants it\)/);
    for (const n of names) {
      const said = log.split('\n').filter((l) => l.includes(applied(n)));
      assert.ok(said.length >= 1, `${n} named in the log: ${log}`);
      assert.doesNotMatch(said.join('\n'), /last good version/);
      assert.match(log, new RegExp(`pod ${NS}/${n} is kept as it runs`));
    }
    assert.match(log, /the file is empty/);
    assert.match(log, /bogus/);
    assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
    await removeE2EPods(client);
  },
);
