import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { AgentClient, AgentRequestError } from '../../src/core/node/client.js';
import { StandaloneNode } from '../../src/core/node/node.js';
import { AppliedSource, splitApplied, type AppliedSourceOptions } from '../../src/core/node/applied.js';
import { appliedDir, appliedFileName, forgetApplied, parseAppliedFileName, podRefProblem } from '../../src/core/node/paths.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import type { SourceObjects } from '../../src/core/objects.js';
import { UnsafePathError } from '../../src/core/util/safe-path.js';
import { scratchDir } from '../support/e2e.js';

const podText = (name: string, extra = '') =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36${extra}}\n`;
/** A file name that, written raw after a comment's "#", would end the comment and add a privileged pod. */
const injecting = `p\n---\n${podText('intruder', ', securityContext: {privileged: true}')}---\n#.yaml`;

function source(dir: string, more: Partial<AppliedSourceOptions> = {}) {
  const errors: { file: string; message: string; pod?: { namespace: string; name: string } }[] = [];
  let pods: IPod[] = [];
  const src = new AppliedSource({
    dir,
    nodeName: 'unit',
    clock: new FakeClock(),
    onSnapshot: (p) => (pods = p),
    onError: (file, message, pod) => errors.push({ file, message, pod }),
    ...more,
  });
  return { src, errors, names: () => pods.map((p) => p.metadata!.name).sort() };
}

test(
  'a file name with a newline and a Pod in it: the applied file holds exactly the pod of the YAML, the name escaped in ' + 'its comment',
  () => {
    const { pods, problems } = splitApplied([{ file: injecting, text: podText('web') }], 'unit');
    assert.deepEqual(problems, []);
    assert.deepEqual(
      pods.map((p) => p.name),
      ['web'],
    );
    const text = pods[0]!.text;
    assert.equal(
      text.split('\n')[0],
      `# handed to the podctl agent from ${JSON.stringify(injecting)}`,
      'one comment line, the name as a JSON string',
    );
    assert.doesNotMatch(text.slice(text.indexOf('\n')), /intruder|privileged/, 'below the comment, only the pod of the YAML');
    const parsed = parseManifestText(text, { kind: 'file', path: '/a/default_web.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(parsed.problems, []);
    assert.deepEqual(
      parsed.pods.map((p) => p.pod.metadata!.name),
      ['web'],
    );
    // Non-ASCII and other control characters too: nothing YAML would refuse or take for a line break.
    const other = splitApplied([{ file: 'caf\u00e9\r\u2028\u0085\u0001.yaml', text: podText('web') }], 'unit').pods[0]!.text.split(
      '\n',
    )[0]!;
    assert.equal(other, '# handed to the podctl agent from "caf\\u00e9\\r\\u2028\\u0085\\u0001.yaml"');
    // An ordinary path is written as it is.
    assert.match(
      splitApplied([{ file: '/m/web.yaml', text: podText('web') }], 'unit').pods[0]!.text,
      /^# handed to the podctl agent from \/m\/web\.yaml\n/,
    );
  },
);

test('what is read back is validated: an applied file holds exactly the pod its name says, or it is refused', () => {
  const dirs = scratchDir('applied-readback');
  try {
    const dir = join(dirs.dir, 'applied');
    mkdirSync(dir);
    writeFileSync(join(dir, 'default_web.yaml'), `# x\n${podText('web')}---\n${podText('intruder')}`);
    writeFileSync(join(dir, 'default_db.yaml'), podText('other'));
    writeFileSync(join(dir, 'stray.yaml'), podText('stray'));
    const { src, errors, names } = source(dir);
    src.start();
    src.stop();
    assert.deepEqual(names(), []);
    const said = (file: string) => errors.find((e) => e.file === join(dir, file))?.message ?? '';
    assert.match(said('default_web.yaml'), /expected exactly the pod default\/web, found the pod\(s\) default\/web, default\/intruder/);
    assert.match(said('default_db.yaml'), /expected exactly the pod default\/db, found the pod\(s\) default\/other/);
    assert.match(said('stray.yaml'), /not an applied file \(expected <namespace>_<name>\.yaml/);
    assert.equal(src.unreadable('default', 'web'), said('default_web.yaml'), 'the file still claims its pod');
    assert.equal(src.unreadable('default', 'stray'), undefined);
  } finally {
    dirs.cleanup();
  }
});

test(
  'a truncated, an empty and an invalid applied file at start: each named, none has a last good version, each still ' + 'claims its pod',
  () => {
    const dirs = scratchDir('applied-corrupt');
    try {
      const dir = join(dirs.dir, 'applied');
      mkdirSync(dir);
      const full = podText('cut');
      writeFileSync(join(dir, 'default_cut.yaml'), full.slice(0, full.indexOf('containers') + 5));
      writeFileSync(join(dir, 'default_empty.yaml'), '');
      writeFileSync(join(dir, 'default_odd.yaml'), podText('odd').replace('spec:', 'bogus: 1\nspec:'));
      writeFileSync(join(dir, 'default_fine.yaml'), podText('fine'));
      writeFileSync(join(dir, 'default_fine.yaml.tmp'), 'a write cut short');
      const { src, errors, names } = source(dir);
      src.start();
      assert.deepEqual(names(), ['fine']);
      assert.deepEqual(
        readdirSync(dir).sort(),
        ['default_cut.yaml', 'default_empty.yaml', 'default_fine.yaml', 'default_odd.yaml'],
        'a temp file left by a crash is removed',
      );
      assert.deepEqual(errors.map((e) => `${e.pod?.namespace}/${e.pod?.name}`).sort(), ['default/cut', 'default/empty', 'default/odd']);
      for (const e of errors) {
        assert.ok(e.message.includes(e.file), e.message);
        assert.doesNotMatch(e.message, /last good version/, 'there is none at start');
        assert.match(e.message, new RegExp(`pod default/${e.pod!.name} is kept as it runs until the file is fixed or the pod deleted`));
        assert.equal(src.unreadable('default', e.pod!.name), e.message);
      }
      assert.match(errors.find((e) => e.pod?.name === 'empty')!.message, /the file is empty/);
      assert.match(errors.find((e) => e.pod?.name === 'odd')!.message, /bogus/);
      assert.equal(src.unreadable('default', 'fine'), undefined);
      // Said once, not at every re-read.
      src.sync();
      assert.equal(errors.length, 3);
      // Fixed: read, and claimed no more as unreadable.
      writeFileSync(join(dir, 'default_empty.yaml'), podText('empty'));
      src.sync();
      assert.deepEqual(names(), ['empty', 'fine']);
      assert.equal(src.unreadable('default', 'empty'), undefined);
      // Turned invalid again: the last good version is kept, and said so.
      writeFileSync(join(dir, 'default_empty.yaml'), '');
      src.sync();
      src.stop();
      assert.deepEqual(names(), ['empty', 'fine']);
      assert.match(errors.at(-1)!.message, /keeping the last good version of .*default_empty\.yaml/);
    } finally {
      dirs.cleanup();
    }
  },
);

test('a full disk: the write fails naming the file, leaves no .tmp behind, and changes nothing', () => {
  const dirs = scratchDir('applied-full');
  try {
    const dir = join(dirs.dir, 'applied');
    let room = 1;
    const { src, names } = source(dir, {
      // The first file fits, the second finds the disk full half-way.
      writeFile: (path, text) => {
        writeFileSync(path, room-- > 0 ? text : text.slice(0, 10), { mode: 0o600 });
        if (room < 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    });
    src.start();
    const web = splitApplied([{ file: 'web.yaml', text: podText('web') }], 'unit').pods;
    src.write(web);
    const before = readFileSync(join(dir, 'default_web.yaml'), 'utf8');
    const both = splitApplied(
      [{ file: 'both.yaml', text: `${podText('db')}---\n${podText('web', ', command: [sleep, "9"]')}` }],
      'unit',
    ).pods;
    room = 1;
    assert.throws(
      () => src.write(both),
      (err: Error) => {
        assert.match(
          err.message,
          new RegExp(`cannot write ${join(dir, 'default_web.yaml').replace(/[/.]/g, '\\$&')}: ENOSPC: no space left on device`),
        );
        assert.match(err.message, /nothing was handed over/);
        return true;
      },
    );
    src.stop();
    assert.deepEqual(readdirSync(dir), ['default_web.yaml'], 'no .tmp, and the first pod of the lot not written either');
    assert.equal(readFileSync(join(dir, 'default_web.yaml'), 'utf8'), before, 'the previous version as it was');
    assert.deepEqual(names(), ['web']);
  } finally {
    dirs.cleanup();
  }
});

test('the writes are renamed into place, 0600, no temp file left', () => {
  const dirs = scratchDir('applied-write');
  try {
    const dir = join(dirs.dir, 'applied');
    const { src, names } = source(dir);
    src.start();
    src.write(splitApplied([{ file: 'a.yaml', text: `${podText('a')}---\n${podText('b')}` }], 'unit').pods);
    src.stop();
    assert.deepEqual(names(), ['a', 'b']);
    assert.deepEqual(readdirSync(dir).sort(), ['default_a.yaml', 'default_b.yaml']);
    for (const f of readdirSync(dir)) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
  } finally {
    dirs.cleanup();
  }
});

test("a pod's ConfigMap is dated by its applied file's mtime: at the write, and as a restart reads it", () => {
  const dirs = scratchDir('applied-dates');
  try {
    const dir = join(dirs.dir, 'applied');
    let objects: SourceObjects = { configMaps: [], secrets: [] };
    const { src } = source(dir, { onSnapshot: (_p, o) => (objects = o) });
    const cfg = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v}\n';
    src.start();
    src.write(
      splitApplied([{ file: 'a.yaml', text: `${podText('a', ', envFrom: [{configMapRef: {name: cfg}}]')}---\n${cfg}` }], 'unit').pods,
    );
    src.stop();
    const file = join(dir, 'default_a.yaml');
    assert.equal(objects.configMaps.length, 1);
    assert.equal(objects.writtenAt?.(objects.configMaps[0]!), statSync(file).mtimeMs);
    const then = new Date(Date.UTC(2026, 0, 2));
    utimesSync(file, then, then);
    const again = source(dir, { onSnapshot: (_p, o) => (objects = o) });
    again.src.start();
    again.src.stop();
    assert.equal(objects.configMaps[0]?.metadata?.name, 'cfg');
    assert.equal(objects.writtenAt?.(objects.configMaps[0]!), then.getTime());
  } finally {
    dirs.cleanup();
  }
});

test('names that reach a path are DNS-1123: a traversing name or namespace is refused and removes nothing', () => {
  const dirs = scratchDir('applied-names');
  try {
    const root = join(dirs.dir, 'root');
    mkdirSync(appliedDir(root), { recursive: true });
    const canary = join(dirs.dir, 'canary.yaml');
    writeFileSync(canary, 'keep me');
    const inRoot = join(root, 'canary.yaml');
    writeFileSync(inRoot, 'keep me');
    for (const [ns, name] of [
      ['default', '../../canary'],
      ['default', '../canary'],
      ['..', 'canary'],
      ['a/..', 'x'],
      ['default', 'a_b'],
      ['default', 'Web'],
      ['', 'web'],
      ['default', ''],
      ['default', `${'a'.repeat(254)}`],
    ] as const) {
      assert.ok(podRefProblem(ns, name), `${ns}/${name}`);
      assert.throws(() => appliedFileName(ns, name), UnsafePathError);
      assert.throws(
        () => forgetApplied(root, ns, name),
        (e: Error) => e instanceof UnsafePathError && /is invalid: expected a DNS-1123/.test(e.message),
        `${ns}/${name}`,
      );
      const { src } = source(appliedDir(root));
      assert.throws(() => src.remove(ns, name), UnsafePathError);
      assert.equal(src.has(ns, name), false);
      assert.equal(src.unreadable(ns, name), undefined);
    }
    assert.equal(
      podRefProblem('default', '../../canary'),
      'pod name "../../canary" is invalid: expected a DNS-1123 subdomain: at most 253 lowercase letters, digits, "-" and ".", starting and ending with a letter or digit',
    );
    assert.match(podRefProblem('..', 'x')!, /^namespace "\.\." is invalid: expected a DNS-1123 label/);
    assert.equal(readFileSync(canary, 'utf8'), 'keep me');
    assert.equal(readFileSync(inRoot, 'utf8'), 'keep me');
    assert.equal(podRefProblem('lab', 'web.v1-2'), undefined);
    assert.deepEqual(parseAppliedFileName('lab_web.v1-2.yaml'), { namespace: 'lab', name: 'web.v1-2' });
    assert.equal(parseAppliedFileName('lab_web.yml'), undefined);
    assert.equal(parseAppliedFileName('a_b_c.yaml'), undefined);
    assert.equal(existsSync(join(appliedDir(root), 'x')), false);
  } finally {
    dirs.cleanup();
  }
});

describe('the agent and its applied files, on the fake runtime', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let dirs: ReturnType<typeof scratchDir>;
  let clock: FakeClock;
  const nodes: StandaloneNode[] = [];
  const said: string[] = [];

  before(async () => {
    fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  after(async () => {
    for (const n of nodes.splice(0)) await stopNode(n);
    client.close();
    await fake.stop();
    dirs?.cleanup();
  });
  beforeEach(async () => {
    for (const n of nodes.splice(0)) await stopNode(n);
    dirs?.cleanup();
    dirs = scratchDir('applied-node');
    clock = new FakeClock();
    said.length = 0;
  });

  /** Lets gRPC round trips finish between clock moves. */
  async function settle(ms: number, steps = 10): Promise<void> {
    for (let i = 0; i < steps; i++) {
      await new Promise((r) => setTimeout(r, 5));
      clock.advance(ms / steps);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  /** Moves the clock until cond holds (an eventual state), or fails after 30 s of real time. */
  async function until(what: string, cond: () => boolean): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!cond()) {
      if (Date.now() > deadline) assert.fail(`never: ${what}`);
      await settle(1000);
    }
  }
  async function stopNode(n: StandaloneNode, cleanup = true): Promise<void> {
    let stopped = false;
    const stopping = n.stop({ cleanup }).finally(() => (stopped = true));
    const deadline = Date.now() + 30_000;
    while (!stopped && Date.now() < deadline) await settle(1000);
    await stopping;
  }
  const root = () => join(dirs.dir, 'root');
  async function startNode(serve = false): Promise<StandaloneNode> {
    const node = new StandaloneNode({
      runtime: client,
      images: client,
      clock,
      rootDir: root(),
      logRoot: join(dirs.dir, 'logs'),
      nodeName: 'unit',
      serve,
      relistPeriodMs: 1000,
      hooks: { onSourceError: (m) => said.push(m) },
    });
    nodes.push(node);
    await node.start();
    return node;
  }
  const running = (node: StandaloneNode, name: string) =>
    node.pods().find((p) => p.metadata!.name === name)?.status?.containerStatuses?.[0]?.state?.running !== undefined;
  const sandboxesOf = (name: string) => fake.sandboxes().filter((s) => s.metadata.name === name);
  const containersOf = (name: string) => fake.containers().filter((c) => sandboxesOf(name).some((s) => s.id === c.podSandboxId));
  const sleeper = (name: string) => podText(name, ', command: [sleep, "3600"]');

  test(
    'a truncated, an empty and an invalid applied file at agent start: the pods keep running, the same containers, each ' +
      'problem named with its file in the log and in the events',
    async () => {
      const first = await startNode();
      first.apply(['cut', 'empty', 'odd'].map((n) => ({ file: `${n}.yaml`, text: sleeper(n) })));
      await until('the three running', () => ['cut', 'empty', 'odd'].every((n) => running(first, n)));
      const before = ['cut', 'empty', 'odd'].map((n) =>
        containersOf(n)
          .map((c) => `${c.id}:${c.state}`)
          .join(),
      );
      nodes.splice(nodes.indexOf(first), 1);
      await stopNode(first, false);
      const file = (n: string) => join(appliedDir(root()), `default_${n}.yaml`);
      writeFileSync(file('cut'), readFileSync(file('cut'), 'utf8').slice(0, 80));
      writeFileSync(file('empty'), '');
      writeFileSync(file('odd'), readFileSync(file('odd'), 'utf8').replace('spec:', 'bogus: 1\nspec:'));

      const second = await startNode();
      // Past several housekeeping passes and the applied source's re-read.
      await until('an event on each pod', () =>
        ['cut', 'empty', 'odd'].every((n) => second.events().some((e) => e.name === n && e.reason === 'FailedValidation')),
      );
      await settle(30_000, 30);
      assert.deepEqual(
        ['cut', 'empty', 'odd'].map((n) =>
          containersOf(n)
            .map((c) => `${c.id}:${c.state}`)
            .join(),
        ),
        before,
        'no container removed, restarted or added',
      );
      for (const n of ['cut', 'empty', 'odd']) {
        assert.equal(sandboxesOf(n).length, 1, n);
        const log = said.filter((m) => m.includes(file(n)));
        assert.equal(log.length, 1, `said once: ${JSON.stringify(said)}`);
        assert.match(log[0]!, new RegExp(`pod default/${n} is kept as it runs`));
        assert.doesNotMatch(log[0]!, /last good version/);
        const events = second.events().filter((e) => e.name === n && e.reason === 'FailedValidation');
        assert.equal(events.length, 1, JSON.stringify(events));
        assert.equal(events[0]!.type, 'Warning');
        assert.equal(events[0]!.uid, sandboxesOf(n)[0]!.metadata.uid, 'on the running pod, as describe finds its events');
        assert.ok(events[0]!.message.includes(file(n)), events[0]!.message);
      }
      assert.match(
        said.find((m) => m.includes(file('empty')))!,
        /the file is empty/,
      );
      assert.match(
        said.find((m) => m.includes(file('odd')))!,
        /bogus/,
      );

      // Fixed: adopted as it runs; deleted: gone.
      writeFileSync(file('empty'), sleeper('empty'));
      await settle(25_000, 25);
      await until('empty adopted', () => running(second, 'empty'));
      assert.equal(
        containersOf('empty')
          .map((c) => `${c.id}:${c.state}`)
          .join(),
        before[1],
      );
      await second.delete('default', 'cut');
      await until('cut removed', () => sandboxesOf('cut').length === 0);
    },
  );

  test('DELETE /v1/pods with a traversing name is a 400 saying the name is invalid, and removes no file', async () => {
    await startNode(true);
    const canary = join(dirs.dir, 'canary.yaml');
    writeFileSync(canary, 'keep me');
    const agent = new AgentClient(root());
    for (const [ns, name] of [
      ['default', '../../canary'],
      ['a/..', '../canary'],
      ['default', 'a_b'],
    ]) {
      await assert.rejects(agent.delete(ns!, name!), (err: AgentRequestError) => {
        assert.equal(err.status, 400);
        assert.match(err.message, /is invalid: expected a DNS-1123/);
        return true;
      });
    }
    assert.equal(readFileSync(canary, 'utf8'), 'keep me');
  });

  test('POST /v1/pods with a file name that holds a newline and a Pod: exactly the pod of the text runs', async () => {
    const node = await startNode(true);
    const agent = new AgentClient(root());
    const refs = await agent.apply([{ file: injecting, text: sleeper('web') }]);
    assert.deepEqual(
      refs.map((r) => `${r.namespace}/${r.name}`),
      ['default/web'],
    );
    await until('web running', () => running(node, 'web'));
    await settle(5000, 5);
    assert.deepEqual(readdirSync(appliedDir(root())), ['default_web.yaml']);
    assert.deepEqual(
      node.pods().map((p) => p.metadata!.name),
      ['web'],
    );
    assert.equal(sandboxesOf('intruder').length, 0);
    assert.deepEqual(said, []);
    await assert.rejects(
      agent.apply([{ file: 'x'.repeat(5000), text: sleeper('long') }]),
      (err: AgentRequestError) => err.status === 400 && /files\[0\]\.file: expected a file name of at most 4096 bytes/.test(err.message),
    );
  });
});
