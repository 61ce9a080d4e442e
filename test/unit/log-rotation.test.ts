import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { followContainerLog, readContainerLog, readRotatedLogs, type LogRecord } from '../../src/core/logs/index.js';
import { ContainerLogManager, rotatedLogFiles, rotatedName } from '../../src/core/logs/rotation.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

/** CRI log lines `n` .. `n + count - 1`, each padded to about `width` bytes. */
function lines(from: number, count: number, width = 100): string {
  let out = '';
  for (let i = from; i < from + count; i++) out += `2026-11-23T10:00:00.000000000Z stdout F line ${i} ${'x'.repeat(width)}\n`;
  return out;
}

const counters = (records: LogRecord[]) => records.map((r) => Number(/^line (\d+)/.exec(r.text)?.[1]));

describe("container log rotation (the kubelet's container log manager)", () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let clock: FakeClock;
  let kubelet: Kubelet;
  let logPath: string;
  const dir = scratchDir('unit-logrotate');

  before(async () => {
    clock = new FakeClock(Date.parse('2026-11-23T10:00:00Z'));
    fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: dir.dir,
      nodeName: 'unit',
      containerLogs: { maxSizeBytes: 10_000, maxFiles: 3 },
    });
    const p = pod('chatty');
    kubelet.addOrUpdatePod(p);
    await kubelet.workers.waitIdle();
    const c = fake.containers().find((x) => x.metadata.name === 'app')!;
    logPath = (await client.containerStatus(c.id)).status!.logPath;
    assert.ok(logPath.startsWith(dir.dir));
  });
  after(async () => {
    client.close();
    await fake.stop();
    dir.cleanup();
  });

  test("a pass finds each log by the kubelet's layout (pod log dir, name/attempt.log): no ContainerStatus per container", async () => {
    const before = fake.calls().ContainerStatus ?? 0;
    assert.deepEqual(await kubelet.containerLogs.rotateLogs(), []);
    assert.equal(fake.calls().ContainerStatus ?? 0, before);
  });

  test('a log under the size is left alone; one over it is renamed, reopened, older ones gzipped, at most maxFiles kept', async () => {
    writeFileSync(logPath, lines(0, 50)); // ~7 KB
    assert.deepEqual(await kubelet.containerLogs.rotateLogs(), []);

    let next = 50;
    appendFileSync(logPath, lines(next, 30));
    next += 30;
    for (let round = 0; round < 4; round++) {
      assert.deepEqual(await kubelet.containerLogs.rotateLogs(), [logPath], `round ${round} rotates`);
      // The fake reopens nothing: the container "writes" a new file after the reopen, as containerd does.
      writeFileSync(logPath, lines(next, 80));
      next += 80;
      clock.advance(1500);
    }
    const names = readdirSync(dirname(logPath)).sort();
    const rotated = await rotatedLogFiles(logPath);
    assert.equal(rotated.length, 2, `current + 2 rotated = maxFiles 3: ${names.join(', ')}`);
    assert.ok(rotated[0]!.endsWith('.gz'), 'older rotated files are gzipped');
    assert.ok(!rotated[1]!.endsWith('.gz'), 'the newest rotated file stays plain');
    assert.match(basename(rotated[1]!), /^0\.log\.\d{8}-\d{6}\.\d{3}$/);
    assert.equal(names.filter((n) => n.endsWith('.tmp')).length, 0);
    for (const f of [logPath, ...rotated]) assert.ok(statSync(f).size < 20_000);
    assert.match(gunzipSync(readFileSync(rotated[0]!)).toString(), /stdout F line \d+/);

    // logs reads across what is kept: contiguous, in order, ending with the current file.
    const read = counters(await readContainerLog(logPath));
    assert.equal(read.at(-1), next - 1);
    assert.deepEqual(
      read,
      Array.from({ length: read.length }, (_, i) => next - read.length + i),
      'no gap, no duplicate',
    );
    assert.equal(read.length, 3 * 80, 'exactly the three files kept');
  });

  test('a line split across a rotation (partial records) is read whole', async () => {
    const split = join(dir.dir, 'split', '0.log');
    mkdirSync(dirname(split), { recursive: true });
    writeFileSync(rotatedName(split, Date.parse('2026-11-23T10:00:00Z')), '2026-11-23T10:00:00Z stdout P hello \n');
    writeFileSync(split, '2026-11-23T10:00:01Z stdout F world\n');
    assert.deepEqual(
      (await readContainerLog(split)).map((r) => r.text),
      ['hello world'],
    );
  });

  /**
   * followContainerLog over a scripted runtime: each poll runs the next step, then `quietPolls` more
   * polls pass with nothing written; what the backlog and onRecords got, by counter.
   */
  async function followScript(path: string, steps: (() => void)[], opts: { quietPolls?: number; backlog?: boolean } = {}) {
    const seen: number[] = [];
    const backlog: number[][] = [];
    let polls = 0;
    await followContainerLog({
      path,
      ...(opts.backlog ? { backlog: (records: LogRecord[]) => backlog.push(counters(records)) } : {}),
      onRecords: (records) => seen.push(...counters(records)),
      pollMs: 1,
      sleep: async () => steps[polls++]?.(),
      shouldStop: () => polls >= steps.length + (opts.quietPolls ?? 1),
    });
    return { seen, backlog };
  }

  /** A log file at <dir>/<name>/0.log holding `content`. */
  function logFile(name: string, content: string): string {
    const path = join(dir.dir, name, '0.log');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    return path;
  }

  test('logs -f follows across a rotation without a gap or a duplicate', async () => {
    const path = logFile('follow', lines(0, 5));
    const rotated = rotatedName(path, Date.parse('2026-11-23T10:00:00Z'));
    const { seen } = await followScript(path, [
      () => appendFileSync(path, lines(5, 5)),
      // A rotation as containerd sees it: the path is renamed, the container still writes to the
      // renamed file until the reopen, then writes to a new file at the path.
      () => {
        renameSync(path, rotated);
        appendFileSync(rotated, lines(10, 5));
        writeFileSync(path, lines(15, 5));
      },
      () => appendFileSync(path, lines(20, 5)),
    ]);
    assert.deepEqual(
      seen,
      Array.from({ length: 25 }, (_, i) => i),
    );
  });

  test("logs -f keeps reading a rotated file that the runtime's old writer flushes into after the new file has lines", async () => {
    const path = logFile('follow-late', lines(0, 10));
    const rotated = rotatedName(path, Date.parse('2026-11-23T10:00:00Z'));
    const { seen } = await followScript(
      path,
      [
        // containerd's ReopenContainerLog: the new writer has written lines 20.. at the path while the
        // old writer's goroutine still flushes 10..19 from its pipe into the renamed file, one poll later.
        () => {
          renameSync(path, rotated);
          writeFileSync(path, lines(20, 5));
        },
        () => appendFileSync(rotated, lines(10, 10)),
        () => appendFileSync(path, lines(25, 5)),
      ],
      { quietPolls: 3 },
    );
    assert.deepEqual(
      seen,
      Array.from({ length: 30 }, (_, i) => i),
    );
  });

  test('logs -f: the backlog is every rotated file then the current one, once, and the follow goes on from there', async () => {
    const path = logFile('follow-backlog', lines(5, 5));
    writeFileSync(rotatedName(path, Date.parse('2026-11-23T09:00:00Z')), lines(0, 5));
    const { seen, backlog } = await followScript(
      path,
      [
        () => {
          renameSync(path, rotatedName(path, Date.parse('2026-11-23T10:00:00Z')));
          writeFileSync(path, lines(10, 5));
        },
      ],
      { quietPolls: 3, backlog: true },
    );
    assert.deepEqual(backlog, [Array.from({ length: 10 }, (_, i) => i)]);
    assert.deepEqual(
      seen,
      Array.from({ length: 5 }, (_, i) => 10 + i),
    );
  });

  test('the rotated files of a backlog skip the one the follow already holds (rotated after it was opened)', async () => {
    const path = logFile('backlog-held', lines(5, 5));
    writeFileSync(rotatedName(path, Date.parse('2026-11-23T09:00:00Z')), lines(0, 5));
    const held = statSync(path).ino;
    renameSync(path, rotatedName(path, Date.parse('2026-11-23T10:00:00Z')));
    writeFileSync(path, lines(10, 5));
    assert.deepEqual(counters(await readRotatedLogs(path, undefined, held)), [0, 1, 2, 3, 4]);
    assert.deepEqual(
      counters(await readRotatedLogs(path)),
      Array.from({ length: 10 }, (_, i) => i),
    );
  });
});

test('a rotation pass the runtime fails is reported and tried again at the next interval, never an unhandled rejection', async () => {
  const clock = new FakeClock();
  let lists = 0;
  const errors: string[] = [];
  const manager = new ContainerLogManager({
    runtime: {
      listContainerSummaries: () => {
        lists++;
        return Promise.reject(new Error('ListContainers did not answer within 1m'));
      },
      containerStatus: () => Promise.reject(new Error('unused')),
      reopenContainerLog: () => Promise.reject(new Error('unused')),
    },
    clock,
    owns: () => true,
    monitorIntervalMs: 10_000,
    onError: (_id, err) => errors.push((err as Error).message),
  });
  manager.start();
  clock.advance(10_000);
  await new Promise((r) => setImmediate(r));
  clock.advance(10_000);
  await new Promise((r) => setImmediate(r));
  manager.stop();
  assert.equal(lists, 2, 'the second interval ran a pass too');
  assert.deepEqual(errors, ['ListContainers did not answer within 1m', 'ListContainers did not answer within 1m']);
});
