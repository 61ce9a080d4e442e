import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { PodList } from 'kubernetes-models/v1';
import { realClock } from '../../src/core/clock.js';
import type { CriClient } from '../../src/core/cri/client.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { SyncLoop } from '../../src/core/loop.js';
import { Metrics } from '../../src/core/metrics.js';
import { startStatusServer } from '../../src/core/api/server.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import {
  E2E_ENDPOINT,
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
 * The debugging commands against pods an in-process kubelet keeps (agent
 * debug-e2e). No watch answers under --root-dir, so the commands read the
 * runtime by podctl's labels, as they do when `watch` does not run.
 */
let client: CriClient;
let kubelet: Kubelet;
let loop: SyncLoop;
const logRoot = scratchDir('e2e-debug-logs');
const rootDir = scratchDir('e2e-debug-root');
const NS = E2E_NAMESPACE;
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

const cli = (args: string[], timeoutMs?: number) => podctlAsync([...args, '--root-dir', rootDir.dir], { timeoutMs });
const start = (args: string[]) => startPodctl([...args, '--root-dir', rootDir.dir]);

/**
 * Runs the command until its output matches and returns that first matching run: a state that
 * comes and goes (CrashLoopBackOff between restarts) or a line a container prints on its own time
 * is asserted on the output that shows it, not on one read at a moment chosen by the test.
 */
const cliUntil = (
  what: string,
  args: string[],
  matches: (r: { code: number; stdout: string; stderr: string }) => boolean,
  timeoutMs = 60_000,
  run: (args: string[]) => ReturnType<typeof cli> = cli,
) =>
  eventually(
    what,
    async () => {
      const r = await run(args);
      return matches(r) ? r : undefined;
    },
    timeoutMs,
  );

function pod(name: string, yamlContainers: string, restartPolicy = 'Always'): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}, labels: {suite: debug}}\nspec:\n  restartPolicy: ${restartPolicy}\n  terminationGracePeriodSeconds: 2\n  containers:\n${yamlContainers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

const shPod = (name: string, script: string, restartPolicy = 'Always') =>
  pod(name, `  - {name: app, image: busybox:1.36, command: [sh, -c, ${JSON.stringify(script)}]}\n`, restartPolicy);

const waitFor = (p: IPod, cond: (s: IPodStatus) => boolean, timeoutMs: number): Promise<IPodStatus> =>
  waitForStatus(kubelet, p, cond, timeoutMs);

const app = (s: IPodStatus) => s.containerStatuses![0]!;
const running = (s: IPodStatus) => s.phase === 'Running' && s.containerStatuses!.every((c) => c.state?.running);

async function removePod(p: IPod): Promise<void> {
  loop.removePods([p.metadata!.uid!]);
  await kubelet.workers.waitIdle();
}

let node: E2ENode;

before(async () => {
  node = await startE2ENode({ logRoot: logRoot.dir, agent: 'debug-e2e' });
  ({ client, kubelet, loop } = node);
});

after(async () => {
  await node.stop();
  logRoot.cleanup();
  rootDir.cleanup();
});

test('get pods without watch: CrashLoopBackOff with restarts "(Xs ago)", --no-headers, -o name, -o wide, -o json as a v1 PodList', async () => {
  const crashy = shPod('crashy', 'echo crashing; exit 1');
  const steady = pod(
    'steady',
    '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  - {name: side, image: busybox:1.36, command: [sleep, "3600"]}\n',
  );
  loop.addPods([crashy, steady]);
  await waitFor(steady, running, 30_000);
  await waitFor(crashy, (s) => app(s).state?.waiting?.reason === 'CrashLoopBackOff' && app(s).restartCount >= 1, 30_000);

  // The container comes back for a moment after each back-off: the table is read until it shows the back-off.
  const table = await cliUntil('get pods showing crashy in CrashLoopBackOff', ['get', 'pods', '-n', NS], (r) =>
    /^crashy\s+\S+\s+CrashLoopBackOff\s/m.test(r.stdout),
  );
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
  assert.match(lines[1]!, /^crashy\s+0\/1\s+CrashLoopBackOff\s+[1-9]\d* \(\d+s ago\)\s+\d+s$/);
  assert.match(lines[2]!, /^steady\s+2\/2\s+Running\s+0\s+\d+s$/);
  assert.equal(lines.length, 3);

  const bare = await cli(['get', 'pods', '-n', NS, '--no-headers']);
  assert.deepEqual(
    bare.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/\s+/)[0]),
    ['crashy', 'steady'],
  );

  const names = await cli(['get', 'pods', '-n', NS, '-o', 'name']);
  assert.equal(names.stdout, 'pod/crashy\npod/steady\n');

  const wide = await cli(['get', 'pods', 'steady', '-n', NS, '-o', 'wide']);
  assert.match(wide.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+CONTAINERS\n/);
  assert.match(wide.stdout, /\nsteady\s+2\/2\s+Running\s+0\s+\S+\s+\d+\.\d+\.\d+\.\d+\s+e2e\s+app,side\n/);

  const json = await cli(['get', 'pods', '-n', NS, '-o', 'json']);
  assert.equal(json.code, 0, json.stderr);
  const list = JSON.parse(json.stdout);
  assert.equal(list.kind, 'PodList');
  assert.equal(list.apiVersion, 'v1');
  new PodList(list).validate();
  const c = list.items.find((p: IPod) => p.metadata!.name === 'crashy');
  assert.equal(c.metadata.uid, crashy.metadata!.uid);
  assert.equal(c.spec.restartPolicy, 'Always');
  assert.equal(c.status.containerStatuses[0].lastState.terminated.exitCode, 1);
  assert.deepEqual(c.metadata.labels, { suite: 'debug' });

  const one = JSON.parse((await cli(['get', 'pods', 'steady', '-n', NS, '-o', 'json'])).stdout);
  assert.equal(one.kind, 'Pod');
  assert.equal(one.status.phase, 'Running');

  await removePod(crashy);
  await removePod(steady);
});

test('get pods NAME that does not exist: one line, exit 1; an empty namespace says so', async () => {
  const r = await cli(['get', 'pods', 'no-such-pod', '-n', NS]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `Error: pod "no-such-pod" not found in namespace ${NS}\n`);
  const empty = await cli(['get', 'pods', '-n', `${NS}-empty`]);
  assert.equal(empty.code, 0);
  assert.equal(empty.stdout, '');
  assert.equal(empty.stderr, `No resources found in ${NS}-empty namespace.\n`);
});

test('get pods -w prints the pod again when its container restarts', async () => {
  const p = shPod('watched', 'sleep 3600');
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const w = start(['get', 'pods', 'watched', '-n', NS, '-w', '--no-headers']);
  try {
    await w.waitFor(/^watched\s+1\/1\s+Running\s+0\s/m, 20_000);
    const id = app(kubelet.statusManager.get(p.metadata!.uid!)!).containerID!.replace(/^.*:\/\//, '');
    await client.stopContainer(id, 0);
    await w.waitFor(/^watched\s+1\/1\s+Running\s+1 \(\d+s ago\)\s/m, 30_000);
  } finally {
    w.interrupt();
    await w.done;
  }
  await removePod(p);
});

test('logs -p prints the previous instance; logs the current one; a pod with no previous instance says so', async () => {
  // Only the first instance fails: its marker is in /dev/shm, the pod's shared memory, which the
  // sandbox keeps across container restarts (this node has no rootDir, so no emptyDir). The second
  // instance stays, so "current" and "previous" name the same two instances however long the commands take.
  const p = shPod(
    'flappy',
    'read u _ < /proc/uptime; echo "out $u"; echo "err line" >&2; [ -f /dev/shm/ran ] && exec sleep 3600; touch /dev/shm/ran; exit 1',
  );
  loop.addPods([p]);
  await waitFor(p, (s) => app(s).restartCount === 1 && running(s), 60_000);
  // The second instance writes its lines on its own time: read until both are there.
  const current = await cliUntil(
    "the second instance's two lines",
    ['logs', 'flappy', '-n', NS],
    (r) => r.code !== 0 || r.stdout.trimEnd().split('\n').length >= 2,
  );
  const previous = await cli(['logs', 'flappy', '-n', NS, '-p']);
  assert.equal(current.code, 0, current.stderr);
  assert.equal(previous.code, 0, previous.stderr);
  // stdout and stderr are two pipes: their relative order in the file is the runtime's.
  const [err, cur] = current.stdout.trimEnd().split('\n').sort();
  assert.match(cur!, /^out \d+\.\d+$/);
  assert.equal(err, 'err line', 'stderr lines are printed too, as kubectl prints them');
  const prev = previous.stdout.trimEnd().split('\n').sort()[1]!;
  assert.match(prev, /^out \d+\.\d+$/);
  assert.ok(Number(prev.slice(4)) < Number(cur!.slice(4)), `previous (${prev}) ran before current (${cur})`);
  assert.equal(
    app(kubelet.statusManager.get(p.metadata!.uid!)!).restartCount,
    1,
    'the marker outlived the first instance: the second one stays',
  );
  await removePod(p);

  const fresh = shPod('fresh', 'echo hi; sleep 3600');
  loop.addPods([fresh]);
  await waitFor(fresh, running, 30_000);
  const none = await cli(['logs', 'fresh', '-n', NS, '-p']);
  assert.equal(none.code, 1);
  assert.equal(none.stderr, 'Error: previous terminated container "app" in pod "fresh" not found\n');
  const bad = await cli(['logs', 'fresh', '-n', NS, '-c', 'nope']);
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'Error: -c "nope": no such container in pod "fresh"; choose one of: app\n');
  const missing = await cli(['logs', 'no-such-pod', '-n', NS]);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, `Error: pod "no-such-pod" not found in namespace ${NS}\n`);
  await removePod(fresh);
});

test('logs --tail 2, --since 10s, --timestamps (the CRI times), a long line joined from partial records', async () => {
  // The late lines come when the test creates /go, not after a sleep: the checks before it see only the early lines however slow they are.
  const script =
    'for i in 1 2 3 4 5; do echo line $i; done; head -c 40000 /dev/zero | tr "\\\\0" x; echo; while [ ! -f /go ]; do sleep .1; done; echo late 1; echo late 2; sleep 3600';
  const p = shPod('chatty', script);
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const all = async () => (await cli(['logs', 'chatty', '-n', NS])).stdout;
  const early = await eventually('the early lines and the long one', async () => {
    const out = await all();
    return out.split('\n').includes('x'.repeat(40000)) ? out : undefined;
  });

  const whole = early.split('\n');
  assert.deepEqual(whole.slice(0, 5), ['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);
  assert.equal(whole[5], 'x'.repeat(40000), 'the runtime split the long line into partial records; logs joins them');

  const tail = await cli(['logs', 'chatty', '-n', NS, '--tail', '2']);
  assert.deepEqual(tail.stdout.split('\n'), ['line 5', 'x'.repeat(40000), '']);

  const stamped = await cli(['logs', 'chatty', '-n', NS, '--timestamps', '--tail', '5']);
  const id = (await client.listContainers({ labelSelector: { 'io.kubernetes.pod.name': 'chatty', 'io.kubernetes.pod.namespace': NS } }))[0]!
    .id;
  const status = await client.containerStatus(id);
  const fileTimes = readFileSync(status.status!.logPath, 'utf8')
    .split('\n')
    .filter((l) => / F line \d$/.test(l))
    .map((l) => l.split(' ')[0]);
  const printed = stamped.stdout.trimEnd().split('\n').slice(0, 4);
  assert.deepEqual(
    printed.map((l) => l.split(' ')[0]),
    fileTimes.slice(1, 5),
    'each line carries the timestamp the runtime recorded',
  );
  assert.match(printed[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line 2$/);

  // --since 10s: once 10 s have passed since the runtime stamped the last early line, the late
  // lines are written; the first --since output that has them must have nothing else.
  const lastEarly = Math.max(
    ...readFileSync(status.status!.logPath, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => Date.parse(l.split(' ')[0]!.replace(/(\.\d{3})\d*/, '$1'))),
  );
  assert.ok(Number.isFinite(lastEarly), 'the log file has timestamps');
  while (Date.now() < lastEarly + 10_500) await new Promise((r) => setTimeout(r, lastEarly + 10_500 - Date.now()));
  const go = await podctlAsync(['exec', 'chatty', '-n', NS, '--root-dir', rootDir.dir, '--', 'touch', '/go']);
  assert.equal(go.code, 0, go.stderr);
  const since = await cliUntil(
    '--since 10s showing the late lines',
    ['logs', 'chatty', '-n', NS, '--since', '10s'],
    (r) => r.code !== 0 || r.stdout.includes('late 2'),
  );
  assert.equal(since.code, 0, since.stderr);
  assert.equal(since.stdout, 'late 1\nlate 2\n', 'the lines older than 10 s are left out');
  await removePod(p);
});

async function w8(cond: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

test('logs -f follows the container across a restart, and ends when the pod is gone', async () => {
  const p = shPod('restarter', 'read u _ < /proc/uptime; echo "instance $u"; sleep 2; exit 1');
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const f = start(['logs', 'restarter', '-n', NS, '-f', '--prefix']);
  try {
    await f.waitFor(/\[pod\/restarter\/app\] instance [\d.]+\n[^]*\[pod\/restarter\/app\] instance [\d.]+\n/, 30_000);
    const lines = f.stdout().trimEnd().split('\n');
    assert.equal(new Set(lines).size, lines.length, 'each instance printed once');
    await removePod(p);
    const end = await Promise.race([f.done, new Promise<undefined>((r) => setTimeout(() => r(undefined), 15_000))]);
    assert.ok(end, 'follow ended by itself once the pod was removed');
    assert.equal(end.code, 0, end.stderr);
  } finally {
    f.interrupt();
    await f.done;
  }
});

test('logs --all-containers prefixes each line with its container', async () => {
  const p = pod(
    'duo',
    '  - {name: one, image: busybox:1.36, command: [sh, -c, "echo from one; sleep 3600"]}\n  - {name: two, image: busybox:1.36, command: [sh, -c, "echo from two; sleep 3600"]}\n',
  );
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  // Each container prints its line on its own time: read until both are there, then the whole output must be exactly them.
  const r = await cliUntil(
    "both containers' lines",
    ['logs', 'duo', '-n', NS, '--all-containers'],
    (o) => o.stdout.includes('from one') && o.stdout.includes('from two'),
  );
  assert.equal(r.stdout, '[pod/duo/one] from one\n[pod/duo/two] from two\n');
  const d = await cliUntil("the default container's line", ['logs', 'duo', '-n', NS], (o) => o.stdout.includes('from'));
  assert.equal(d.stdout, 'from one\n');
  assert.equal(d.stderr, 'Defaulted container "one" out of: one, two\n');
  await removePod(p);
});

test("exec: ExecSync's exit code is podctl's, stdout and stderr apart; -i streams stdin; a stopped container is one line", async () => {
  const p = pod(
    'shell',
    '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  - {name: side, image: busybox:1.36, command: [sleep, "3600"]}\n',
  );
  loop.addPods([p]);
  await waitFor(p, running, 30_000);

  const three = await cli(['exec', 'shell', '-n', NS, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.equal(three.code, 3);
  assert.equal(three.stdout, 'out\n');
  assert.equal(three.stderr, 'Defaulted container "app" out of: app, side\nerr\n');

  const side = await cli(['exec', 'shell', '-n', NS, '-c', 'side', '--', 'sh', '-c', 'echo $((6*7))']);
  assert.equal(side.code, 0, side.stderr);
  assert.equal(side.stdout, '42\n');

  const piped = await podctlWithInput(['exec', '-i', 'shell', '-n', NS, '-c', 'app', '--', 'sh'], 'echo from stdin $((2+3)); exit 5\n');
  assert.equal(piped.stdout, 'from stdin 5\n', piped.stderr);
  assert.equal(piped.code, 5, piped.stderr);

  const none = await cli(['exec', 'shell', '-n', NS]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^Error: no command given; put it after --/);

  const missing = await cli(['exec', 'ghost', '-n', NS, '--', 'true']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, `Error: pod "ghost" not found in namespace ${NS}\n`);
  await removePod(p);

  const done = shPod('finished', 'exit 0', 'Never');
  loop.addPods([done]);
  await waitFor(done, (s) => s.phase === 'Succeeded', 30_000);
  const stopped = await cli(['exec', 'finished', '-n', NS, '--', 'true']);
  assert.equal(stopped.code, 1);
  assert.equal(
    stopped.stderr,
    'Error: container "app" in pod "finished" is not running: exited (exit 0); see `podctl logs finished -c app`\n',
  );
  await removePod(done);
});

/** podctl with stdin written and kept open until it exits (the remote command ends the session, not EOF). */
function podctlWithInput(args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, args[0]!, '--root-dir', rootDir.dir, ...args.slice(1)], {
      env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.write(input);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

test('exec -it under a pseudo-terminal (script): a shell with a tty, its exit code returned', async () => {
  const p = shPod('interactive', 'sleep 3600');
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const command = [process.execPath, BIN, 'exec', '-it', 'interactive', '-n', NS, '--root-dir', rootDir.dir, '--', 'sh']
    .map((a) => `'${a}'`)
    .join(' ');
  // script gives podctl a pty as its stdin and stdout; -e returns the child's exit code.
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const until = async (re: RegExp) => {
    const end = Date.now() + 20_000;
    while (!re.test(out)) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${re}; output: ${JSON.stringify(out)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  try {
    await until(/\/ # /); // busybox's prompt
    child.stdin.write('tty; echo in-$((6*7))\r');
    await until(/in-42/);
    assert.match(out, /\/dev\/pts\/\d+/, 'the remote shell has a terminal');
    child.stdin.write('exit 7\r');
    assert.equal(await exited, 7);
  } finally {
    child.kill('SIGKILL');
  }
  await removePod(p);
});

/** Pods made by a kubelet with no sync loop: nothing restarts them, as when no agent keeps them. */
let staticKubelet: Kubelet | undefined;
async function startUnmanaged(p: IPod): Promise<void> {
  staticKubelet ??= newKubelet({
    runtime: client,
    images: client,
    clock: realClock,
    logRoot: logRoot.dir,
    rootDir: join(rootDir.dir, 'static'),
    nodeName: 'e2e',
    agent: 'debug-e2e-static',
  });
  await staticKubelet.syncPod(p, 'create');
}

// On SIGTERM it says so, takes 3 s (or cleanUpSeconds) to clean up, then says it exited cleanly; all of it into /out/log
// (stdout of PID 1 too), since the pod's log directory goes with the pod.
const slowStop = (cleanUpSeconds: number) =>
  `exec >>/out/log 2>&1; trap 'echo got TERM; sleep ${cleanUpSeconds}; echo clean exit; exit 0' TERM; echo ready; sleep 3600 & wait`;
const SLOW_STOP = slowStop(3);

/** Mounts a host directory at /out, which outlives the pod; returns the host path of /out/log. */
function withHostOut(p: IPod): string {
  const host = join(rootDir.dir, 'out', p.metadata!.name!);
  p.spec!.volumes = [...(p.spec!.volumes ?? []), { name: 'out', hostPath: { path: host, type: 'DirectoryOrCreate' } }];
  const c = p.spec!.containers[0]!;
  c.volumeMounts = [...(c.volumeMounts ?? []), { name: 'out', mountPath: '/out' }];
  return join(host, 'log');
}

test("delete pod honours the grace period: the pod's own gives time to clean up; --force ends it with SIGKILL after the 2 s minimum", async () => {
  const slow = shPod('slow-stop', SLOW_STOP);
  // hasty's clean-up takes 20 s, far past the SIGKILL --force sends 2 s after SIGTERM (so load cannot
  // let it finish first), and well within its own 60 s grace period (so only --force keeps it from finishing).
  const hasty = shPod('hasty-stop', slowStop(20));
  const outs = new Map<IPod, string>();
  for (const p of [slow, hasty]) {
    p.spec!.terminationGracePeriodSeconds = p === hasty ? 60 : 10;
    outs.set(p, withHostOut(p));
    await startUnmanaged(p);
  }
  const read = (p: IPod) => (existsSync(outs.get(p)!) ? readFileSync(outs.get(p)!, 'utf8') : '');
  assert.ok(await w8(async () => read(slow).includes('ready') && read(hasty).includes('ready'), 20_000), 'both pods run');

  const graceful = await cli(['delete', 'pod', 'slow-stop', '-n', NS]);
  assert.equal(graceful.code, 0, graceful.stderr);
  assert.equal(graceful.stdout, 'pod "slow-stop" deleted\n');
  assert.match(read(slow), /^got TERM\nclean exit\n/m, 'the container had its 10 s to finish');

  const forced = await cli(['delete', 'pod/hasty-stop', '-n', NS, '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(read(hasty), /^got TERM\n/m);
  assert.doesNotMatch(read(hasty), /clean exit/, 'killed before its clean-up could finish');

  for (const name of ['slow-stop', 'hasty-stop']) {
    assert.deepEqual(
      await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NS } }),
      [],
      `${name} has no sandbox left`,
    );
    assert.deepEqual(
      await client.listContainers({ labelSelector: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NS } }),
      [],
      `${name} has no container left`,
    );
  }
  for (const p of [slow, hasty])
    assert.equal(
      existsSync(join(logRoot.dir, `${NS}_${p.metadata!.name}_${p.metadata!.uid}`)),
      false,
      'the log directory went with the pod',
    );
});

test('delete pod runs the preStop hook before SIGTERM, also from a process that only knows the pod from the runtime', async () => {
  const p = shPod('with-prestop', SLOW_STOP);
  p.spec!.terminationGracePeriodSeconds = 10;
  p.spec!.containers[0]!.lifecycle = { preStop: { exec: { command: ['sh', '-c', 'echo prestop ran >> /proc/1/fd/1'] } } };
  const log = withHostOut(p);
  await startUnmanaged(p);
  const read = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  assert.ok(await w8(async () => read().includes('ready'), 20_000), 'the pod runs');
  const r = await cli(['delete', 'pod', 'with-prestop', '-n', NS]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(read(), /^prestop ran\ngot TERM\nclean exit\n/m, 'preStop, then SIGTERM, then the clean-up within the grace period');
  assert.deepEqual(
    await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': 'with-prestop', 'io.kubernetes.pod.namespace': NS } }),
    [],
  );
});

test(
  'delete: a pod that does not exist is one line and exit 1 (after the others are deleted); -f FILE deletes what the ' + 'file defines',
  async () => {
    const a = shPod('del-a', 'sleep 3600');
    await startUnmanaged(a);
    const r = await cli(['delete', 'pod', 'no-such-pod', 'del-a', '-n', NS, '--grace-period', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'pod "del-a" deleted\n');
    assert.equal(r.stderr, `Error: pod "no-such-pod" not found in namespace ${NS}\n`);

    const b = shPod('del-b', 'sleep 3600');
    await startUnmanaged(b);
    const file = join(rootDir.dir, 'del-b.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: del-b, namespace: ${NS}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
    );
    const byFile = await cli(['delete', '-f', file, '--grace-period', '1']);
    assert.equal(byFile.code, 0, byFile.stderr);
    assert.equal(byFile.stdout, 'pod "del-b" deleted\n');
    assert.equal((await cli(['get', 'pods', 'del-b', '-n', NS])).code, 1, 'gone');
    const usage = await cli(['delete', 'deployment', 'x']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /"deployment": expected pod NAME… or pod\/NAME/);
  },
);

test('delete a pod the running watch keeps from a file: deleted, with a warning that the file brings it back (and it does)', async () => {
  const p = shPod('kept', 'sleep 3600');
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  // The in-process loop with the status server watch serves: what `delete` asks is the same /pods.
  const server = await startStatusServer(join(rootDir.dir, 'podctl.sock'), {
    pods: () => [...kubelet.pods.values()].map((q) => ({ ...q, status: kubelet.statusManager.get(q.metadata!.uid!) })),
    health: () => ({ ok: true, checks: [] }),
    metrics: new Metrics(),
  });
  try {
    const first = app(kubelet.statusManager.get(p.metadata!.uid!)!).containerID;
    const r = await cli(['delete', 'pod', 'kept', '-n', NS, '--grace-period', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'pod "kept" deleted\n');
    assert.equal(
      r.stderr,
      'Warning: the running watch keeps pod "kept" from /e2e/kept.yaml and will start it again; remove it from /e2e/kept.yaml (or the file) to delete it for good\n',
    );
    await waitFor(p, (s) => running(s) && app(s).containerID !== first, 30_000);
  } finally {
    server.close();
  }
  await removePod(p);
});

test(
  'describe pod in CrashLoopBackOff: events, the timeline and the one-line reason with the last log line; without a watch, the ' +
    'timeline and a note',
  async () => {
    const p = shPod('crashloop', 'echo starting; echo crashing now; exit 1');
    loop.addPods([p]);
    await waitFor(p, (s) => app(s).state?.waiting?.reason === 'CrashLoopBackOff' && app(s).restartCount >= 2, 40_000);
    const watchDir = scratchDir('e2e-debug-watch');
    const server = await startStatusServer(join(watchDir.dir, 'podctl.sock'), {
      pods: () => [...kubelet.pods.values()].map((q) => ({ ...q, status: kubelet.statusManager.get(q.metadata!.uid!) })),
      health: () => ({ ok: true, checks: [] }),
      metrics: new Metrics(),
      events: () => kubelet.events.all(),
    });
    try {
      // Each back-off ends in a short run: describe is read until it shows the back-off again, and
      // (the kubelet prunes the first instance's container on its own time) that instance gone.
      const r = await cliUntil(
        'describe (the watch) showing CrashLoopBackOff, instance 0 pruned',
        ['describe', 'pod', 'crashloop', '-n', NS, '--root-dir', watchDir.dir],
        (o) => /^Status:\s+Running \(CrashLoopBackOff\)$/m.test(o.stdout) && /app: instance 0 \(no longer in the runtime\)/.test(o.stdout),
        60_000,
        (a) => podctlAsync(a),
      );
      assert.equal(r.code, 0, r.stderr);
      const out = r.stdout;
      assert.match(out, /^Status:\s+Running \(CrashLoopBackOff\)$/m);
      assert.match(out, /^Seen By:\s+the running watch$/m);
      assert.match(
        out,
        /^Why:\s+container app is in CrashLoopBackOff: exited with code 1, \d+ exits so far; next start (in \d+ s|due now); last log line: "crashing now"$/m,
      );
      assert.match(out, /^\s+State:\s+Waiting\n\s+Reason:\s+CrashLoopBackOff$/m);
      assert.match(out, /^\s+Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+1$/m);
      assert.match(out, /^\s+Restart Count:\s+[2-9]$/m);
      const timeline = out.slice(out.indexOf('Timeline:'), out.indexOf('Events:'));
      assert.match(timeline, /sandbox created/);
      assert.match(timeline, /! app: exited with code 1/);
      assert.match(timeline, /app: instance 0 \(no longer in the runtime\) wrote its first line/);
      assert.match(timeline, /! app: BackOff: back-off \d+s restarting failed container=app/);
      assert.match(timeline, /app: next start, when its CrashLoopBackOff ends/);
      const events = out.slice(out.indexOf('Events:'));
      assert.match(events, /^\s+Type\s+Reason\s+Age\s+From\s+Message$/m);
      assert.match(events, /^\s+Normal\s+Started\s+\S+ \(x\d+ over \S+\)\s+kubelet\s+\[app\] Started container app$/m);
      assert.match(events, /^\s+Warning\s+BackOff\s+.*kubelet\s+\[app\] back-off \d+s restarting failed container=app/m);

      const bare = await cliUntil('describe (the runtime) showing CrashLoopBackOff', ['describe', 'pod/crashloop', '-n', NS], (o) =>
        /^Why:\s+container app is in CrashLoopBackOff/m.test(o.stdout),
      );
      assert.equal(bare.code, 0, bare.stderr);
      assert.match(bare.stdout, /^Seen By:\s+the runtime \(no watch answers/m);
      assert.match(bare.stdout, /^Why:\s+container app is in CrashLoopBackOff: exited with code 1/m);
      assert.match(bare.stdout, /! app: exited with code 1/);
      assert.match(bare.stdout, /^Events:\s+<none> \(events need a running `podctl watch`/m);
    } finally {
      server.close();
      watchDir.cleanup();
    }
    await removePod(p);
  },
);

test(
  'describe: a Failed pod says which container failed and why it stays so; a running pod has no Why; a missing pod ' + 'is one line',
  async () => {
    const failed = shPod('failing', 'echo bye; exit 2', 'Never');
    const ok = shPod('fine', 'sleep 3600');
    loop.addPods([failed, ok]);
    await waitFor(failed, (s) => s.phase === 'Failed', 30_000);
    await waitFor(ok, running, 30_000);
    const r = await cli(['describe', 'pod', 'failing', '-n', NS]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Why:\s+pod Failed: container app exited with code 2 and restartPolicy Never does not start it again; last log line: "bye"; /m,
    );
    const fine = await cli(['describe', 'pod', 'fine', '-n', NS]);
    assert.doesNotMatch(fine.stdout, /^Why:/m);
    assert.match(fine.stdout, /^\s+State:\s+Running$/m);
    const missing = await cli(['describe', 'pod', 'nope', '-n', NS]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, `Error: pod "nope" not found in namespace ${NS}\n`);
    await removePod(failed);
    await removePod(ok);
  },
);

test('get containers, get images, inspect, stats: crictl-style views of the same pod', async () => {
  const p = pod(
    'viewed',
    '  - {name: app, image: busybox:1.36, command: [sh, -c, "while :; do :; done"]}\n  - {name: idle, image: busybox:1.36, command: [sleep, "3600"]}\n',
  );
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const ids = Object.fromEntries(
    kubelet.statusManager.get(p.metadata!.uid!)!.containerStatuses!.map((c) => [c.name, c.containerID!.replace(/^.*:\/\//, '')]),
  );

  const ps = await cli(['get', 'containers', '--pod', 'viewed', '-n', NS]);
  assert.equal(ps.code, 0, ps.stderr);
  const rows = ps.stdout.trimEnd().split('\n');
  assert.match(rows[0]!, /^CONTAINER\s+IMAGE\s+CREATED\s+STATE\s+NAME\s+ATTEMPT\s+POD ID\s+POD$/);
  assert.deepEqual(
    rows
      .slice(1)
      .map((r) => r.split(/\s{3,}/))
      .map((c) => [c[0], c[1], c[3], c[4], c[5], c[7]])
      .sort((a, b) => a[3]!.localeCompare(b[3]!)),
    [
      [ids.app!.slice(0, 13), 'busybox:1.36', 'Running', 'app', '0', 'viewed'],
      [ids.idle!.slice(0, 13), 'busybox:1.36', 'Running', 'idle', '0', 'viewed'],
    ],
  );
  const quiet = await cli(['get', 'containers', '--pod', 'viewed', '-n', NS, '-q']);
  assert.deepEqual(quiet.stdout.trim().split('\n').sort(), [ids.app, ids.idle].sort());

  const images = await podctlAsync(['get', 'images']);
  assert.match(images.stdout, /^IMAGE\s+TAG\s+IMAGE ID\s+SIZE\n/);
  assert.match(images.stdout, /\ndocker\.io\/library\/busybox\s+1\.36\s+[0-9a-f]{13}\s+[\d.]+[kM]B\n/);

  const byName = JSON.parse((await cli(['inspect', 'container', 'viewed/idle', '-n', NS])).stdout);
  assert.equal(byName.status.id, ids.idle);
  assert.equal(byName.status.state, 'CONTAINER_RUNNING');
  assert.equal(byName.status.labels['io.kubernetes.container.name'], 'idle');
  assert.equal(typeof byName.info.info, 'object', "the runtime's verbose info is expanded JSON");
  const byPrefix = JSON.parse((await cli(['inspect', 'container', ids.idle!.slice(0, 12)])).stdout);
  assert.equal(byPrefix.status.id, ids.idle);
  const sandbox = JSON.parse((await cli(['inspect', 'pod', 'viewed', '-n', NS])).stdout);
  assert.equal(sandbox.status.metadata.name, 'viewed');
  assert.equal(sandbox.status.state, 'SANDBOX_READY');
  const missing = await cli(['inspect', 'container', 'ffffffffffffffffff']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, 'Error: container "ffffffffffffffffff" not found\n');

  // How much CPU the busy loop gets depends on the machine's load, so the two containers are compared,
  // not held to thresholds; a sample the runtime cannot rate ('-') is taken again.
  const cpuOf = (out: string) =>
    Object.fromEntries(
      out
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s{3,}/))
        .filter((c) => c[1]?.startsWith('viewed/'))
        .map((c) => [c[1]!, Number(c[2])]),
    );
  const stats = await cliUntil(
    'a stats sample with the CPU % of both containers',
    ['stats', '--pod', 'viewed', '-n', NS, '--interval', '1500'],
    (o) => {
      const cpu = cpuOf(o.stdout);
      return o.code !== 0 || (Number.isFinite(cpu['viewed/app']) && Number.isFinite(cpu['viewed/idle']));
    },
  );
  assert.equal(stats.code, 0, stats.stderr);
  const lines = stats.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^CONTAINER\s+NAME\s+CPU %\s+MEM\s+DISK\s+INODES$/);
  const cpu = cpuOf(stats.stdout);
  assert.ok(cpu['viewed/app']! > 0, `the busy loop uses CPU: ${stats.stdout}`);
  assert.ok(cpu['viewed/app']! > cpu['viewed/idle']!, `more than sleep does: ${stats.stdout}`);
  await removePod(p);
});

test(
  'events: from the running watch (-w prints new ones as they come); without a watch, what the runtime implies, ' + 'with a note',
  async () => {
    const p = shPod('eventful', 'sleep 3600');
    loop.addPods([p]);
    await waitFor(p, running, 30_000);
    const bare = await cli(['events', '-n', NS, '--for', 'pod/eventful']);
    assert.equal(bare.code, 0, bare.stderr);
    assert.match(bare.stderr, /^note: no watch answers/);
    assert.match(bare.stdout, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
    assert.match(bare.stdout, /\n\S+\s+Normal\s+Created\s+pod\/eventful\s+\[app\] Created container app\n/);
    assert.match(bare.stdout, /\n\S+\s+Normal\s+Started\s+pod\/eventful\s+\[app\] Started container app\n/);

    const watchDir = scratchDir('e2e-debug-events');
    const server = await startStatusServer(join(watchDir.dir, 'podctl.sock'), {
      pods: () => [...kubelet.pods.values()].map((q) => ({ ...q, status: kubelet.statusManager.get(q.metadata!.uid!) })),
      health: () => ({ ok: true, checks: [] }),
      metrics: new Metrics(),
      events: () => kubelet.events.all(),
    });
    const w = startPodctl(['events', '-n', NS, '--for', 'eventful', '-w', '--root-dir', watchDir.dir]);
    try {
      await w.waitFor(/Normal\s+Started\s+pod\/eventful\s+\[app\] Started container app\n/, 15_000);
      const id = app(kubelet.statusManager.get(p.metadata!.uid!)!).containerID!.replace(/^.*:\/\//, '');
      await client.stopContainer(id, 0);
      // The restart repeats Created and Started: the watch's recorder counts them, -w prints them again.
      await w.waitFor(/Normal\s+Started\s+pod\/eventful\s+\[app\] Started container app \(x2\)\n/, 30_000);
      const json = JSON.parse((await podctlAsync(['events', '-n', NS, '-o', 'json', '--root-dir', watchDir.dir])).stdout);
      assert.equal(json.kind, 'EventList');
      const started = json.items.find(
        (e: { reason: string; involvedObject: { name: string } }) => e.reason === 'Started' && e.involvedObject.name === 'eventful',
      );
      assert.equal(started.count, 2);
      assert.equal(started.involvedObject.fieldPath, 'spec.containers{app}');
    } finally {
      w.interrupt();
      await w.done;
      server.close();
      watchDir.cleanup();
    }
    await removePod(p);
  },
);
