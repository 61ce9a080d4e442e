import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { parseManifestText } from '../../src/core/pod/index.js';
import { pack } from 'tar-stream';
import {
  E2E_NAMESPACE,
  eventually,
  podctlAsync,
  scratchDir,
  startE2ENode,
  startPodctl,
  waitForStatus,
  type E2ENode,
} from '../support/e2e.js';

/**
 * cp and port-forward against pods an in-process kubelet keeps (agent
 * debug-depth-e2e); the commands read the runtime by podctl's labels.
 */
let node: E2ENode;
const logRoot = scratchDir('e2e-depth-logs');
const rootDir = scratchDir('e2e-depth-root');
/** The kubelet's own state directory, not the commands' --root-dir: they find its pod directories through the sandboxes. */
const nodeRoot = scratchDir('e2e-depth-node-root');
const work = scratchDir('e2e-depth-work');
/** The root dir of the agent that run --detach starts for the --copy-to test's original. */
const copyRoot = scratchDir('e2e-depth-copy-root');
const NS = E2E_NAMESPACE;

// Flags go first: everything after -- belongs to the container's command.
const withFlags = (args: string[]) => {
  const words = args[0] === 'get' || args[0] === 'describe' ? 2 : 1;
  return [...args.slice(0, words), '-n', NS, '--root-dir', rootDir.dir, ...args.slice(words)];
};
const cli = (args: string[], timeoutMs?: number) => podctlAsync(withFlags(args), { timeoutMs });
const start = (args: string[]) => startPodctl(withFlags(args));

function pod(name: string, containers: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n${containers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

const running = (s: IPodStatus) => s.phase === 'Running' && (s.containerStatuses ?? []).every((c) => c.state?.running);
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

before(async () => {
  node = await startE2ENode({ logRoot: logRoot.dir, rootDir: nodeRoot.dir, agent: 'debug-depth-e2e' });
});

after(async () => {
  await node.stop();
  logRoot.cleanup();
  rootDir.cleanup();
  nodeRoot.cleanup();
  work.cleanup();
  copyRoot.cleanup();
});

test('cp: a 5 MB file to the pod and back keeps its sha256; a directory comes back into an existing directory', async () => {
  const box = pod('cpbox', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
  node.loop.addPods([box]);
  await waitForStatus(node.kubelet, box, running, 60_000);
  const src = join(work.dir, 'big.bin');
  writeFileSync(src, randomBytes(5 * 1024 * 1024));

  const up = await cli(['cp', src, 'cpbox:/tmp/in/big.bin']);
  assert.equal(up.code, 0, up.stderr);
  const back = join(work.dir, 'back.bin');
  const down = await cli(['cp', 'cpbox:/tmp/in/big.bin', back]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(sha256(back), sha256(src));

  const into = join(work.dir, 'into');
  mkdirSync(into);
  const dir = await cli(['cp', 'cpbox:/tmp/in', into]);
  assert.equal(dir.code, 0, dir.stderr);
  assert.equal(sha256(join(into, 'in', 'big.bin')), sha256(src));

  const missing = await cli(['cp', 'cpbox:/no/such', join(work.dir, 'none')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /tar in the container exited 1: .*'\/no'/);
  await node.remove(box);
});

test('cp: a hostile container whose tar sends "../x" is refused, and nothing is written outside (or inside) the destination', async () => {
  // The container's PATH finds /evil/tar first, which prints a crafted archive instead of packing anything.
  const evil = pod(
    'cpevil',
    '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    env: [{name: PATH, value: "/evil:/usr/sbin:/usr/bin:/sbin:/bin"}]\n',
  );
  node.loop.addPods([evil]);
  await waitForStatus(node.kubelet, evil, running, 60_000);
  const crafted = join(work.dir, 'crafted.tar');
  const archive = pack();
  archive.entry({ name: 'ok.txt', mode: 0o644 }, 'fine');
  archive.entry({ name: '../x', mode: 0o644 }, 'escaped');
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const c of archive as AsyncIterable<Buffer>) chunks.push(c);
  writeFileSync(crafted, Buffer.concat(chunks));
  const push = await cli(['cp', crafted, 'cpevil:/evil/archive.tar']);
  assert.equal(push.code, 0, push.stderr);
  const arm = await cli([
    'exec',
    'cpevil',
    '--',
    'sh',
    '-c',
    'printf "#!/bin/sh\\ncat /evil/archive.tar\\n" > /evil/tar && chmod +x /evil/tar',
  ]);
  assert.equal(arm.code, 0, arm.stderr);

  const base = join(work.dir, 'hostile');
  const dest = join(base, 'dest');
  mkdirSync(dest, { recursive: true });
  const r = await cli(['cp', 'cpevil:/etc/hostname', dest]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /refusing archive entry "\.\.\/x": it would be written outside/);
  assert.deepEqual(readdirSync(dest), []);
  assert.deepEqual(readdirSync(base), ['dest']);
  assert.equal(existsSync(join(work.dir, 'x')), false);
  await node.remove(evil);
});

function get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

test(
  'port-forward pod/web: busybox httpd answers on 127.0.0.1, 20 parallel requests all succeed; the pod stopping ends it with ' +
    'a message',
  async () => {
    const token = `served-${randomBytes(6).toString('hex')}`;
    const web = pod(
      'web',
      `  - {name: app, image: busybox:1.36, command: [sh, -c, "mkdir -p /www && echo ${token} > /www/index.html && exec httpd -f -p 8080 -h /www"]}\n`,
    );
    node.loop.addPods([web]);
    await waitForStatus(node.kubelet, web, running, 60_000);

    const pf = start(['port-forward', 'pod/web', '0:8080']);
    try {
      const line = await pf.waitFor(/Forwarding from 127\.0\.0\.1:\d+ -> 8080/, 60_000);
      const port = Number(/:(\d+) ->/.exec(line)![1]);
      // httpd may still be binding right after the container started: the first request is retried.
      let first: { status: number; body: string } | undefined;
      for (let i = 0; i < 50 && first?.status !== 200; i++) {
        first = await get(port).catch(() => undefined);
        if (first?.status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(first?.body.trim(), token);
      const all = await Promise.all(Array.from({ length: 20 }, () => get(port)));
      assert.deepEqual(
        all.map((r) => [r.status, r.body.trim()]),
        Array.from({ length: 20 }, () => [200, token]),
      );

      await node.remove(web);
      const done = await pf.done;
      assert.equal(done.code, 1);
      assert.match(done.stderr, /port-forward: pod "web" (stopped|is gone)/);
    } finally {
      pf.kill('SIGKILL');
    }
  },
);

test('port-forward: --address beyond loopback warns; a bad port spec is a usage error (exit 2)', async () => {
  const bad = await cli(['port-forward', 'pod/nothing', 'http']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /http: expected \[LOCAL:\]REMOTE/);
  const missing = await cli(['port-forward', 'pod/nothing', '8080', '--address', '0.0.0.0']);
  assert.match(missing.stderr, /Warning: listening on 0\.0\.0\.0/);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /pod "nothing" not found/);
});

test("debug --target app -- ps ax: lists the app's sleep 3600; the ephemeral container shows in get -o json and describe, never moves restarts or Ready, survives housekeeping, and goes with the pod", async () => {
  const target = pod('dbg', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
  node.loop.addPods([target]);
  await waitForStatus(node.kubelet, target, (s) => running(s) && s.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 60_000);
  // Every status the agent reports from here on: none may count a restart or lose Ready.
  const seen: IPodStatus[] = [];
  const stop = node.kubelet.observe({ onStatus: ({ pod: p, status }) => p.metadata!.uid === target.metadata!.uid && seen.push(status) });
  try {
    const ps = await cli(['debug', 'dbg', '--image', 'busybox:1.36', '--target', 'app', '-c', 'dbgshell', '--', 'ps', 'ax']);
    assert.equal(ps.code, 0, ps.stderr);
    assert.match(ps.stdout, /^\s*1 root\s+sleep 3600$/m);
    assert.match(ps.stderr, /Created debug container dbgshell targeting app/);

    const failing = await cli(['debug', 'dbg', '--image', 'busybox:1.36', '-c', 'fails', '--', 'sh', '-c', 'echo to-stdout; exit 3']);
    assert.equal(failing.code, 3);
    assert.match(failing.stdout, /^to-stdout$/m);

    const json = await cli(['get', 'pods', 'dbg', '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    const p = JSON.parse(json.stdout) as IPod;
    const eph = p.status!.ephemeralContainerStatuses ?? [];
    assert.deepEqual(eph.map((e) => [e.name, e.state?.terminated?.exitCode]).sort(), [
      ['dbgshell', 0],
      ['fails', 3],
    ]);
    assert.deepEqual(p.spec!.ephemeralContainers?.map((e) => e.name).sort(), ['dbgshell', 'fails']);
    assert.equal(p.status!.containerStatuses![0]!.restartCount, 0);
    assert.equal(p.status!.conditions!.find((c) => c.type === 'Ready')?.status, 'True');
    const described = await cli(['describe', 'pod', 'dbg']);
    assert.match(described.stdout, /Ephemeral Containers:\n {2}(dbgshell|fails):/);

    // The agent's housekeeping neither removes them nor restarts them.
    await node.kubelet.housekeeping();
    await node.kubelet.workers.waitIdle();
    const uid = target.metadata!.uid!;
    const left = await node.client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid, 'io.podctl.ephemeral': 'true' } });
    assert.deepEqual(left.map((c) => [c.metadata?.name, c.state]).sort(), [
      ['dbgshell', 'CONTAINER_EXITED'],
      ['fails', 'CONTAINER_EXITED'],
    ]);
    const agentStatus = await eventually('the agent reporting both debug containers as ended', async () => {
      const s = node.kubelet.statusManager.get(uid);
      return (s?.ephemeralContainerStatuses ?? []).filter((e) => e.state?.terminated).length === 2 ? s : undefined;
    });
    assert.equal(agentStatus.containerStatuses![0]!.restartCount, 0);
    assert.equal(agentStatus.conditions!.find((c) => c.type === 'Ready')?.status, 'True');
    assert.deepEqual(
      seen.filter((s) => s.containerStatuses![0]!.restartCount !== 0 || s.conditions?.find((c) => c.type === 'Ready')?.status !== 'True'),
      [],
    );

    await node.remove(target);
    assert.deepEqual(await node.client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } }), []);
  } finally {
    stop();
  }
});

test('attach to a container printing a counter every 0.5 s shows new lines as they come', async () => {
  const counter = pod(
    'counter',
    '  - {name: app, image: busybox:1.36, command: [sh, -c, "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.5; done"]}\n',
  );
  node.loop.addPods([counter]);
  await waitForStatus(node.kubelet, counter, running, 60_000);
  const att = start(['attach', 'counter']);
  try {
    const first = Number(/tick-(\d+)/.exec(await att.waitFor(/tick-\d+/, 60_000))![1]);
    // A later value than the first one seen: the stream goes on, it is not a replay of the log.
    await eventually('a second, later counter value', async () => {
      const values = [...att.stdout().matchAll(/tick-(\d+)/g)].map((m) => Number(m[1]));
      return values.some((v) => v > first) || undefined;
    });
  } finally {
    att.kill('SIGKILL');
    await att.done;
  }
  await node.remove(counter);
});

test(
  'bundle of a pod with a Secret env var: every listed part is in the archive, and the secret value is in none of ' + 'its files',
  async () => {
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    const text = `apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: ${NS}}\nstringData: {PASSWORD: ${secret}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: bundled, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sh, -c, "echo run-$((RANDOM)); sleep 3600"]\n    args: [sh, "--password=$(PASS)"]\n    env:\n    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: PASSWORD}}}\n    - {name: EXPANDED, value: "pre-$(PASS)-post"}\n    - {name: PLAIN, value: plain-value}\n`;
    const parsed = parseManifestText(text, { kind: 'file', path: '/e2e/bundled.yaml' }, { nodeName: 'e2e' });
    assert.deepEqual(
      parsed.problems.filter((p) => p.severity === 'error'),
      [],
    );
    node.kubelet.objects.set('bundled', { configMaps: parsed.configMaps, secrets: parsed.secrets });
    const p = parsed.pods[0]!.pod;
    node.loop.addPods([p]);
    await waitForStatus(node.kubelet, p, running, 60_000);
    // The spec copy that says which values come from a Secret is in the kubelet's pod directory, not on the container.
    const [listed] = await node.client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } });
    assert.equal(listed!.annotations['io.podctl.container.spec'], undefined);
    assert.ok(
      existsSync(
        join(
          nodeRoot.dir,
          'pods',
          p.metadata!.uid!,
          'containers',
          'app',
          `${listed!.annotations['io.kubernetes.container.hash']}.spec.json`,
        ),
      ),
    );
    // The runtime does hold the value (the container's environment), so the redaction is what keeps it out.
    const raw = await cli(['inspect', 'container', 'bundled/app', '--show-secrets']);
    assert.ok(raw.stdout.includes(secret), 'the runtime repeats the secret in its inspect output');
    // Also where the kubelet expanded $(PASS): another variable's value and an argument.
    assert.ok(
      raw.stdout.includes(`pre-${secret}-post`) && raw.stdout.includes(`--password=${secret}`),
      'expanded into EXPANDED and the args',
    );
    // inspect itself redacts it unless asked, and says so; the literal value stays.
    const redacted = await cli(['inspect', 'container', 'bundled/app']);
    assert.equal(redacted.code, 0, redacted.stderr);
    assert.ok(!redacted.stdout.includes(secret), 'inspect does not print the secret by default');
    assert.ok(redacted.stdout.includes('plain-value'));
    assert.match(redacted.stderr, /come from a Secret are redacted; --show-secrets prints them/);

    // The container prints its run- line on its own time after it starts: the bundle is made once the log has it.
    await eventually(
      'the run- line in the log',
      async () => ((await cli(['logs', 'bundled'])).stdout.includes('run-') ? true : undefined),
      60_000,
    );
    const out = join(work.dir, 'bundled.tar.gz');
    const r = await cli(['bundle', 'bundled', '-o', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Wrote .*bundled\.tar\.gz/);
    const dest = join(work.dir, 'bundle-x');
    mkdirSync(dest);
    const tar = spawnSync('tar', ['xzf', out, '-C', dest]);
    assert.equal(tar.status, 0, String(tar.stderr));
    const files = listFiles(join(dest, 'bundled-bundle'));
    for (const part of [
      'manifest.yaml',
      'status.json',
      'events.json',
      'timeline.txt',
      'logs/app/current.log',
      'trace.txt',
      'versions.json',
    ]) {
      assert.ok(files.includes(part), `${part} in ${files.join(', ')}`);
    }
    assert.ok(files.some((f) => /^inspect\/sandbox-[0-9a-f]{12}\.json$/.test(f)));
    assert.ok(files.some((f) => /^inspect\/container-app-[0-9a-f]{12}\.json$/.test(f)));
    const contents = Object.fromEntries(files.map((f) => [f, readFileSync(join(dest, 'bundled-bundle', f), 'utf8')]));
    assert.deepEqual(
      files.filter((f) => contents[f]!.includes(secret)),
      [],
    );
    assert.match(contents['manifest.yaml']!, /secretKeyRef:\s+key: PASSWORD\s+name: creds/);
    assert.match(contents['logs/app/current.log']!, /stdout run-\d+/);
    assert.equal((JSON.parse(contents['status.json']!) as IPodStatus).phase, 'Running');
    assert.match(contents['versions.json']!, /"runtime":/);
    assert.ok(
      Object.entries(contents).some(([f, c]) => f.startsWith('inspect/container-') && c.includes('plain-value')),
      'literal values are kept',
    );
    await node.remove(p);
  },
);

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

test('debug --copy-to starts a copy of the pod with the debug container added, and leaves the original as it was', async () => {
  const original = pod('orig', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
  node.loop.addPods([original]);
  await waitForStatus(node.kubelet, original, running, 60_000);
  const r = await cli(['debug', 'orig', '--copy-to', 'orig-copy', '--image', 'busybox:1.36', '-c', 'dbgc', '--', 'sleep', '3600']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Created pod orig-copy, a copy of orig with debug container dbgc/);
  const copy = await eventually('the copy running both containers', async () => {
    const g = await cli(['get', 'pods', 'orig-copy', '-o', 'json']);
    if (g.code !== 0) return undefined;
    const p = JSON.parse(g.stdout) as IPod;
    return p.status?.containerStatuses?.length === 2 && p.status.containerStatuses.every((c) => c.state?.running) ? p : undefined;
  });
  assert.deepEqual(
    copy.spec!.containers.map((c) => [c.name, c.command?.join(' ')]),
    [
      ['app', 'sleep 3600'],
      ['dbgc', 'sleep 3600'],
    ],
  );
  const orig = JSON.parse((await cli(['get', 'pods', 'orig', '-o', 'json'])).stdout) as IPod;
  assert.deepEqual(
    orig.spec!.containers.map((c) => c.name),
    ['app'],
  );
  assert.equal(orig.status!.ephemeralContainerStatuses, undefined);
  const del = await cli(['delete', 'pod', 'orig-copy', '--force']);
  assert.equal(del.code, 0, del.stderr);
  // The copy was started as run --detach starts pods: by the agent on this root dir, stopped here by its PID.
  const stop = await podctlAsync(['agent', 'stop', '--root-dir', rootDir.dir]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.match(stop.stdout, /agent pid \d+ stopped/, 'the copy ran under an agent of its own');
  await node.remove(original);
});

test('debug --copy-to takes the ConfigMap and Secret the pod names: the copy restarts with them after the original is gone', async () => {
  const file = join(work.dir, 'withcfg.yaml');
  writeFileSync(
    file,
    `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ${NS}}\ndata: {MODE: blue}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: tok, namespace: ${NS}}\nstringData: {token: s3cret}\n---\n` +
      `apiVersion: v1\nkind: Pod\nmetadata: {name: withcfg, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: busybox:1.36\n` +
      `    command: [sh, -c, 'echo "mode=$MODE token=$(cat /tok/token)"; exec sleep 3600']\n    env: [{name: MODE, valueFrom: {configMapKeyRef: {name: cfg, key: MODE}}}]\n` +
      `    volumeMounts: [{name: tok, mountPath: /tok}]\n  volumes: [{name: tok, secret: {secretName: tok}}]\n`,
  );
  const flags = ['-n', NS, '--root-dir', copyRoot.dir];
  const copyStatus = async () => {
    const g = await podctlAsync(['get', 'pods', 'withcfg-copy', ...flags, '-o', 'json']);
    return g.code === 0 ? (JSON.parse(g.stdout) as IPod).status : undefined;
  };
  try {
    // The original is handed to an agent of its own (run --detach), which keeps its applied file.
    const run = await podctlAsync(['run', '--detach', file, '--root-dir', copyRoot.dir, '--log-root', logRoot.dir]);
    assert.equal(run.code, 0, run.stderr);
    const r = await podctlAsync([
      'debug',
      'withcfg',
      ...flags,
      '--copy-to',
      'withcfg-copy',
      '--image',
      'busybox:1.36',
      '-c',
      'dbgc',
      '--',
      'sleep',
      '3600',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /Created pod withcfg-copy, a copy of withcfg with debug container dbgc \(with ConfigMap cfg, Secret tok from \S+\)/,
    );
    await eventually(
      'the copy running both containers',
      async () => ((await copyStatus())?.containerStatuses?.filter((c) => c.state?.running).length === 2 ? true : undefined),
      60_000,
    );
    const del = await podctlAsync(['delete', 'pod', 'withcfg', ...flags, '--grace-period', '0']);
    assert.equal(del.code, 0, del.stderr);
    // The copy's app stops; the agent starts it again, which needs the ConfigMap and the Secret now that the original is gone.
    const [app] = await node.client.listContainers({
      labelSelector: { 'io.kubernetes.pod.name': 'withcfg-copy', 'io.kubernetes.pod.namespace': NS, 'io.kubernetes.container.name': 'app' },
    });
    assert.ok(app, 'the copy has an app container');
    await node.client.stopContainer(app.id, 0);
    const restarted = await eventually(
      "the copy's app running again",
      async () => {
        const s = (await copyStatus())?.containerStatuses?.find((c) => c.name === 'app');
        return s && s.restartCount >= 1 && s.state?.running
          ? s
          : s?.state?.waiting?.reason === 'CreateContainerConfigError'
            ? s
            : undefined;
      },
      60_000,
    );
    assert.equal(restarted.state?.waiting, undefined, `the copy's app is waiting: ${JSON.stringify(restarted.state?.waiting)}`);
    const logs = await eventually(
      "the restarted app's first line",
      async () => {
        const l = await podctlAsync(['logs', 'withcfg-copy', '-c', 'app', ...flags]);
        return l.code === 0 && l.stdout.trim() ? l : undefined;
      },
      30_000,
    );
    assert.equal(logs.stdout.trim(), 'mode=blue token=s3cret');
  } finally {
    await podctlAsync(['delete', 'pod', 'withcfg', 'withcfg-copy', ...flags, '--grace-period', '0']);
    const stop = await podctlAsync(['agent', 'stop', '--root-dir', copyRoot.dir]);
    assert.equal(stop.code, 0, stop.stderr);
  }
});
