import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../src/core/clock.js';
import { ObjectFiles, startVersionFor } from '../../src/core/kubeapi/object-files.js';
import { ContinueExpiredError, WatchCache, type KubeObject, type WatchEvent } from '../../src/core/kubeapi/store.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

const scratch: string[] = [];
after(() => scratch.forEach((d) => rmSync(d, { recursive: true, force: true })));
function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `podctl-${prefix}-`));
  scratch.push(dir);
  return dir;
}

const pod = (name: string, labels: Record<string, string> = {}, phase = 'Pending', namespace = 'default'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: 'app', image: 'busybox' }] },
  status: { phase },
});

const rv = (o: KubeObject | undefined) => o?.metadata?.resourceVersion;
const brief = (events: WatchEvent[]) => events.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}@${rv(e.object)}`);

function collect(cache: WatchCache, resource: string, opts: Parameters<WatchCache['watch']>[1] = {}) {
  const events: WatchEvent[] = [];
  const handle = cache.watch(resource, opts, (e) => events.push(e));
  return { events, handle };
}

function statusError(fn: () => unknown): KubeStatusError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof KubeStatusError, `expected a KubeStatusError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected an error');
}

describe('WatchCache: versions, put and remove', () => {
  test('every change takes the next version of one counter across kinds; an unchanged put is no change', () => {
    const cache = new WatchCache({ startVersion: 100 });
    assert.equal(cache.resourceVersion, '100');
    const a = cache.put('pods', pod('a'));
    assert.equal(rv(a), '101');
    assert.equal(rv(cache.put('configmaps', { metadata: { name: 'c', namespace: 'default' }, data: { k: 'v' } })), '102');
    const { events } = collect(cache, 'pods', { resourceVersion: '102' });
    // The same object again, with another resourceVersion and managedFields time: the stored one back, no event.
    const again = cache.put('pods', { ...pod('a'), metadata: { ...pod('a').metadata, resourceVersion: '5' } });
    assert.equal(again, a);
    const withFields = (time: string) => ({
      ...pod('a'),
      metadata: { ...pod('a').metadata, managedFields: [{ manager: 'kubectl', operation: 'Apply', time }] },
    });
    const m = cache.put('pods', withFields('2026-01-01T00:00:00Z'));
    assert.equal(rv(m), '103');
    assert.equal(cache.put('pods', withFields('2026-02-02T00:00:00Z')), m);
    assert.equal(rv(cache.put('pods', pod('a', {}, 'Running'))), '104');
    assert.equal(cache.resourceVersion, '104');
    assert.deepEqual(brief(events), ['MODIFIED a@103', 'MODIFIED a@104']);
  });

  test('remove: DELETED with the object at a new, final version; absent objects are no change', () => {
    const cache = new WatchCache({ startVersion: 1 });
    cache.put('pods', pod('a'));
    const { events } = collect(cache, 'pods', { resourceVersion: '2' });
    const gone = cache.remove('pods', 'default', 'a');
    assert.equal(rv(gone), '3');
    assert.equal(gone?.status && (gone.status as { phase: string }).phase, 'Pending');
    assert.equal(cache.get('pods', 'default', 'a'), undefined);
    assert.equal(cache.remove('pods', 'default', 'a'), undefined);
    assert.equal(cache.resourceVersion, '3');
    assert.deepEqual(brief(events), ['DELETED a@3']);
  });

  test('the caller keeps its object: put stores a copy of the top level, not the argument itself', () => {
    const cache = new WatchCache({ startVersion: 1 });
    const mine = pod('a');
    cache.put('pods', mine);
    assert.equal(rv(mine), undefined);
  });
});

test('WatchCache: the namespaces in use are counted as objects come and go, a re-put or a change counted once', () => {
  const cache = new WatchCache({ startVersion: 1 });
  cache.put('pods', pod('a', {}, 'Pending', 'team-a'));
  cache.put('pods', pod('a', {}, 'Running', 'team-a'));
  cache.put('pods', pod('b', {}, 'Pending', 'team-a'));
  cache.put('pods', pod('c', {}, 'Pending', 'team-b'));
  cache.put('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'team-c', name: 'cfg' } });
  assert.deepEqual([...cache.namespaces.inUse(['pods'])].sort(), ['team-a', 'team-b']);
  assert.deepEqual([...cache.namespaces.inUse(['pods', 'configmaps'])].sort(), ['team-a', 'team-b', 'team-c']);
  cache.remove('pods', 'team-a', 'a');
  assert.deepEqual([...cache.namespaces.inUse(['pods'])].sort(), ['team-a', 'team-b'], 'b is still in team-a');
  cache.remove('pods', 'team-a', 'b');
  cache.remove('pods', 'team-a', 'b');
  assert.deepEqual([...cache.namespaces.inUse(['pods'])], ['team-b'], 'a second remove of b changes nothing');
  cache.remove('pods', 'team-b', 'c');
  assert.deepEqual([...cache.namespaces.inUse(['pods', 'secrets'])], []);
});

describe('WatchCache: list', () => {
  test('the current items sorted by namespace/name, filtered by namespace and selectors, at the current version', () => {
    const cache = new WatchCache({ startVersion: 10 });
    cache.put('pods', pod('b', { app: 'web' }, 'Running'));
    cache.put('pods', pod('a', { app: 'db' }));
    cache.put('pods', pod('c', { app: 'web' }, 'Pending', 'other'));
    cache.put('configmaps', { metadata: { name: 'x', namespace: 'default' } });
    const names = (r: { items: KubeObject[] }) => r.items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);
    const all = cache.list('pods');
    assert.deepEqual(names(all), ['default/a', 'default/b', 'other/c']);
    assert.equal(all.resourceVersion, '14');
    assert.deepEqual(names(cache.list('pods', { namespace: 'default' })), ['default/a', 'default/b']);
    assert.deepEqual(names(cache.list('pods', { labelSelector: 'app=web' })), ['default/b', 'other/c']);
    assert.deepEqual(names(cache.list('pods', { fieldSelector: 'status.phase=Running' })), ['default/b']);
    assert.deepEqual(names(cache.list('nodes')), []);
    assert.equal(statusError(() => cache.list('pods', { fieldSelector: 'spec.image=x' })).code, 400);
  });

  test('pagination: limit and continue give a consistent list at the first page version, whatever changed since', () => {
    const cache = new WatchCache({ startVersion: 0 });
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) cache.put('pods', pod(n));
    const first = cache.list('pods', { limit: 2 });
    assert.deepEqual(
      first.items.map((o) => o.metadata?.name),
      ['p1', 'p2'],
    );
    assert.equal(first.remainingItemCount, 3);
    assert.ok(first.continue);
    // Changes after the first page: the following pages still show the list as it was at its version.
    cache.remove('pods', 'default', 'p3');
    cache.put('pods', pod('p4', {}, 'Running'));
    cache.put('pods', pod('p45'));
    const second = cache.list('pods', { limit: 2, continue: first.continue });
    assert.equal(second.resourceVersion, first.resourceVersion);
    assert.deepEqual(
      second.items.map((o) => `${o.metadata?.name}@${rv(o)}`),
      ['p3@3', 'p4@4'],
    );
    const third = cache.list('pods', { limit: 2, continue: second.continue });
    assert.deepEqual(
      third.items.map((o) => o.metadata?.name),
      ['p5'],
    );
    assert.equal(third.continue, undefined);
    // With a selector the page holds up to limit matches, and no remainingItemCount.
    const sel = cache.list('pods', { limit: 1, labelSelector: '!missing' });
    assert.equal(sel.items.length, 1);
    assert.equal(sel.remainingItemCount, undefined);
    assert.ok(sel.continue);
  });

  test('a continue token older than the history: 410 Expired with the API server message and an inconsistent token', () => {
    const cache = new WatchCache({ startVersion: 0, historySize: 3 });
    for (const n of ['a', 'b', 'c']) cache.put('pods', pod(n));
    const first = cache.list('pods', { limit: 1 });
    for (let i = 0; i < 4; i++) cache.put('pods', pod('a', { n: String(i) }));
    const err = statusError(() => cache.list('pods', { limit: 1, continue: first.continue }));
    assert.ok(err instanceof ContinueExpiredError);
    assert.equal(err.code, 410);
    assert.equal(err.reason, 'Expired');
    assert.equal(
      err.message,
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    );
    const status = err.toStatus() as { metadata: { continue: string }; code: number };
    assert.equal(status.code, 410);
    const rest = cache.list('pods', { continue: status.metadata.continue });
    assert.deepEqual(
      rest.items.map((o) => o.metadata?.name),
      ['b', 'c'],
    );
    assert.equal(rest.resourceVersion, cache.resourceVersion);
    assert.equal(statusError(() => cache.list('pods', { continue: 'not-a-token' })).code, 400);
  });
});

describe('WatchCache: watch', () => {
  test('no resourceVersion or "0": an ADDED for each current match, then the changes as they happen', () => {
    const cache = new WatchCache({ startVersion: 0 });
    cache.put('pods', pod('b'));
    cache.put('pods', pod('a'));
    for (const resourceVersion of [undefined, '0']) {
      const { events, handle } = collect(cache, 'pods', { resourceVersion });
      const a = cache.get('pods', 'default', 'a');
      assert.deepEqual(brief(events), [`ADDED a@${rv(a)}`, 'ADDED b@1']);
      cache.put('configmaps', { metadata: { name: 'x', namespace: 'default' }, data: { for: String(resourceVersion) } });
      cache.put('pods', pod('a', { for: String(resourceVersion) }));
      assert.deepEqual(brief(events).slice(2), [`MODIFIED a@${cache.resourceVersion}`]);
      handle.stop();
      cache.remove('pods', 'default', 'a');
      cache.put('pods', pod('a', { for: String(resourceVersion) }));
      assert.equal(events.length, 3, 'nothing after stop');
    }
  });

  test('from a listed version: every change after it, then live; from before the history: 410 with the exact message', () => {
    const cache = new WatchCache({ startVersion: 0, historySize: 3 });
    cache.put('pods', pod('a'));
    const listed = cache.list('pods').resourceVersion;
    cache.put('pods', pod('b'));
    cache.put('pods', pod('a', {}, 'Running'));
    const { events } = collect(cache, 'pods', { resourceVersion: listed });
    assert.deepEqual(brief(events), ['ADDED b@2', 'MODIFIED a@3']);
    cache.remove('pods', 'default', 'b');
    assert.deepEqual(brief(events).slice(2), ['DELETED b@4']);
    // The ring keeps 3 changes (2, 3, 4): a watch from 1 still gets them all; from 0 it cannot.
    assert.deepEqual(brief(collect(cache, 'pods', { resourceVersion: '1' }).events), ['ADDED b@2', 'MODIFIED a@3', 'DELETED b@4']);
    cache.put('pods', pod('c'));
    const err = statusError(() => collect(cache, 'pods', { resourceVersion: '1' }));
    assert.equal(err.code, 410);
    assert.equal(err.reason, 'Expired');
    assert.equal(err.message, 'too old resource version: 1 (2)');
    assert.equal(err.toStatus().message, 'too old resource version: 1 (2)');
    assert.equal(collect(cache, 'pods', { resourceVersion: '2' }).events.length, 3);
  });

  test('a resourceVersion that is not a number: 400; one from the future: 504 Too large resource version', () => {
    const cache = new WatchCache({ startVersion: 5 });
    const bad = statusError(() => collect(cache, 'pods', { resourceVersion: 'abc' }));
    assert.equal(bad.code, 400);
    assert.equal(bad.message, 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax');
    const future = statusError(() => collect(cache, 'pods', { resourceVersion: '9' }));
    assert.equal(future.code, 504);
    assert.equal(future.message, 'Timeout: Too large resource version: 9, current: 5');
    assert.equal(statusError(() => collect(cache, 'pods', { labelSelector: 'a b' })).code, 400);
  });

  test('a filtered watch: an object that starts matching is ADDED, one that stops matching is DELETED', () => {
    const cache = new WatchCache({ startVersion: 0 });
    cache.put('pods', pod('a', { app: 'db' }));
    const { events } = collect(cache, 'pods', { labelSelector: 'app=web', namespace: 'default' });
    assert.equal(events.length, 0);
    cache.put('pods', pod('a', { app: 'web' }));
    cache.put('pods', pod('a', { app: 'web' }, 'Running'));
    cache.put('pods', pod('a', { app: 'db' }, 'Running'));
    cache.put('pods', pod('z', { app: 'web' }, 'Pending', 'other'));
    cache.put('pods', pod('b', { app: 'db' }));
    assert.deepEqual(brief(events), ['ADDED a@2', 'MODIFIED a@3', 'DELETED a@4']);
    // The DELETED carries the object as it last matched, at the version of the change that ended the match.
    assert.deepEqual(events[2]!.object.metadata?.labels, { app: 'web' });
    // The same from history, and with a field selector.
    const replay = collect(cache, 'pods', { resourceVersion: '1', fieldSelector: 'status.phase=Running' });
    assert.deepEqual(brief(replay.events), ['ADDED a@3', 'MODIFIED a@4']);
  });

  test('a listener that throws is dropped; the others get every event, in order, also when one writes from its callback', () => {
    const cache = new WatchCache({ startVersion: 0 });
    const seen: string[] = [];
    cache.watch('pods', {}, () => {
      throw new Error('broken client');
    });
    cache.watch('pods', {}, (e) => {
      seen.push(`first ${e.type} ${e.object.metadata?.name}`);
      if (e.object.metadata?.name === 'a') cache.put('pods', pod('b'));
    });
    cache.watch('pods', {}, (e) => seen.push(`second ${e.type} ${e.object.metadata?.name}`));
    cache.put('pods', pod('a'));
    cache.put('pods', pod('c'));
    assert.deepEqual(seen, ['first ADDED a', 'second ADDED a', 'first ADDED b', 'second ADDED b', 'first ADDED c', 'second ADDED c']);
  });

  test('bookmarks when asked: kind, apiVersion and the current version only, every interval of the injected clock', () => {
    const clock = new FakeClock();
    const cache = new WatchCache({ startVersion: 7, clock, bookmarkIntervalMs: 1000 });
    const plain = collect(cache, 'pods', {});
    const marked = collect(cache, 'pods', { allowBookmarks: true });
    clock.advance(1000);
    cache.put('pods', pod('a'));
    clock.advance(1000);
    assert.deepEqual(
      plain.events.map((e) => e.type),
      ['ADDED'],
    );
    assert.deepEqual(marked.events, [
      { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '7' } } },
      marked.events[1],
      { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '8' } } },
    ]);
    marked.handle.stop();
    assert.equal(clock.pendingTimers(), 0, 'no timer once no watch wants bookmarks');
  });

  test('sendInitialEvents: the state, then a bookmark marking its end; false with no version: only what comes', () => {
    const cache = new WatchCache({ startVersion: 0, clock: new FakeClock() });
    cache.put('pods', pod('a'));
    const list = collect(cache, 'pods', { sendInitialEvents: true, allowBookmarks: true, resourceVersion: '1' });
    assert.deepEqual(brief(list.events), ['ADDED a@1', 'BOOKMARK @1']);
    assert.deepEqual(list.events[1]!.object.metadata?.annotations, { 'k8s.io/initial-events-end': 'true' });
    const none = collect(cache, 'pods', { sendInitialEvents: false });
    cache.put('pods', pod('b'));
    assert.deepEqual(brief(none.events), ['ADDED b@2']);
  });
});

describe('ObjectFiles', () => {
  const secret = (name: string, data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'default' },
    data,
  });

  test("when each was written: its file's mtime, at a save and as loaded after a restart; none once deleted", () => {
    const dir = join(scratchDir('kubeapi-files-mtime'), 'objects');
    const files = new ObjectFiles(dir);
    files.save('secrets', secret('s', { k: 'djE=' }));
    const path = join(dir, 'secrets', 'default', 's.json');
    assert.equal(files.writtenAt('secrets', 'default', 's'), statSync(path).mtimeMs);
    // As a restart finds it: the file's own time, not the load's.
    utimesSync(path, new Date(Date.UTC(2026, 0, 2)), new Date(Date.UTC(2026, 0, 2)));
    const restarted = new ObjectFiles(dir);
    restarted.load();
    assert.equal(restarted.writtenAt('secrets', 'default', 's'), Date.UTC(2026, 0, 2));
    assert.equal(restarted.writtenAt('configmaps', 'default', 's'), undefined, 'by resource');
    restarted.delete('secrets', 'default', 's');
    assert.equal(restarted.writtenAt('secrets', 'default', 's'), undefined);
  });

  test('round trip: one 0600 file per object under resource/namespace, replaced whole, deleted', () => {
    const dir = join(scratchDir('kubeapi-files'), 'objects');
    const files = new ObjectFiles(dir);
    files.save('secrets', secret('s', { k: 'djE=' }));
    files.save('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'kube-system' }, data: { a: 'b' } });
    files.save('secrets', secret('s', { k: 'djI=' }));
    const path = join(dir, 'secrets', 'default', 's.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'secrets')).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(join(dir, 'secrets', 'default')), ['s.json'], 'no temp file left');
    assert.deepEqual(
      new ObjectFiles(dir).load().map((s) => [s.resource, s.obj.metadata?.name, (s.obj as { data: unknown }).data]),
      [
        ['configmaps', 'c', { a: 'b' }],
        ['secrets', 's', { k: 'djI=' }],
      ],
    );
    files.delete('secrets', 'default', 's');
    files.delete('secrets', 'default', 's');
    assert.deepEqual(
      new ObjectFiles(dir).load().map((s) => s.obj.metadata?.name),
      ['c'],
    );
  });

  test('a cluster-scoped object (a Namespace) is kept at <resource>/<name>.json and read back as such', () => {
    const dir = scratchDir('kubeapi-files-cluster');
    const files = new ObjectFiles(dir);
    files.save('namespaces', { metadata: { name: 'shop', labels: { team: 'a' } } });
    files.save('configmaps', { metadata: { name: 'shop', namespace: 'default' } });
    assert.ok(existsSync(join(dir, 'namespaces', 'shop.json')));
    assert.deepEqual(
      new ObjectFiles(dir).load().map((s) => [s.resource, s.obj.metadata?.namespace, s.obj.metadata?.name]),
      [
        ['configmaps', 'default', 'shop'],
        ['namespaces', undefined, 'shop'],
      ],
    );
    files.delete('namespaces', undefined, 'shop');
    assert.deepEqual(
      new ObjectFiles(dir).load().map((s) => s.resource),
      ['configmaps'],
    );
    assert.throws(
      () => files.save('namespaces', { metadata: { name: '../x' } }),
      /metadata\.name "\.\.\/x": expected a DNS-1123 subdomain/,
    );
  });

  test('a corrupt or misplaced file is skipped and named in the log; a name that is no path element is refused', () => {
    const dir = scratchDir('kubeapi-files-bad');
    const logs: string[] = [];
    const files = new ObjectFiles(dir, (m) => logs.push(m));
    files.save('configmaps', { metadata: { name: 'good', namespace: 'default' } });
    const nsDir = join(dir, 'configmaps', 'default');
    writeFileSync(join(nsDir, 'broken.json'), '{"metadata": ');
    writeFileSync(join(nsDir, 'moved.json'), JSON.stringify({ metadata: { name: 'other', namespace: 'default' } }));
    writeFileSync(join(nsDir, '.half.json.tmp'), '{');
    assert.deepEqual(
      files.load().map((s) => s.obj.metadata?.name),
      ['good'],
    );
    assert.equal(logs.length, 2);
    assert.match(logs[0]!, new RegExp(`^${join(nsDir, 'broken.json')}: not valid JSON( \\(at position \\d+\\))?; skipped$`));
    assert.match(
      logs[1]!,
      new RegExp(`^${join(nsDir, 'moved.json')}: holds "default/other", not the default/moved its path names; skipped$`),
    );
    assert.ok(!readdirSync(nsDir).includes('.half.json.tmp'), 'a temp file of a cut-short write is removed');
    // A corrupt Secret: the log names the file, never its text (Node's JSON errors quote the input).
    mkdirSync(join(dir, 'secrets', 'default'), { recursive: true });
    writeFileSync(join(dir, 'secrets', 'default', 's.json'), 'c2VjcmV0 {"data": {"k": "c2VjcmV0"}}');
    files.load();
    assert.match(logs.at(-1)!, /secrets\/default\/s\.json: not valid JSON/);
    assert.doesNotMatch(logs.join('\n'), /c2VjcmV0/);
    assert.throws(
      () => files.save('configmaps', { metadata: { name: '../x', namespace: 'default' } }),
      /metadata\.name "\.\.\/x": expected a DNS-1123 subdomain/,
    );
    assert.throws(() => files.delete('secrets', '..', 'x'), /namespace "\.\.": expected a DNS-1123 subdomain/);
  });

  test('versions keep increasing across a reopen: reserved before use, the next start above every version handed out', () => {
    const dir = scratchDir('kubeapi-files-version');
    const logs: string[] = [];
    const files = new ObjectFiles(dir, (m) => logs.push(m));
    assert.equal(files.readVersion(), undefined);
    const clockMs = 1_000; // a clock far behind: the persisted reservation must carry the versions on its own
    const open = () =>
      new WatchCache({
        startVersion: startVersionFor(files.readVersion(), clockMs),
        reserveVersions: (upTo) => files.saveVersion(upTo),
        reserveBlock: 3,
      });
    const first = open();
    const seen: number[] = [];
    for (let i = 0; i < 5; i++)
      seen.push(Number(rv(first.put('configmaps', { metadata: { name: 'c', namespace: 'default' }, data: { i: String(i) } }))));
    assert.equal(files.readVersion(), seen.at(-1)! + 1, 'reserved in blocks of 3, ahead of the last version given');
    assert.equal(statSync(join(dir, 'version')).mode & 0o777, 0o600);
    const second = open();
    const next = Number(rv(second.put('configmaps', { metadata: { name: 'c', namespace: 'default' } })));
    assert.ok(next > seen.at(-1)!, `${next} after ${seen.at(-1)}`);
    // A lost version file: the clock in microseconds is the floor.
    assert.equal(startVersionFor(undefined, 1_700_000_000_000), 1_700_000_000_000_000);
    assert.equal(startVersionFor(5, 0), 5);
    writeFileSync(join(dir, 'version'), 'garbage');
    assert.equal(files.readVersion(), undefined);
    assert.match(logs.at(-1)!, /version: expected a decimal resourceVersion, found "garbage"/);
    mkdirSync(join(dir, 'x'), { recursive: true });
    assert.equal(readFileSync(join(dir, 'version'), 'utf8'), 'garbage', 'reading changes nothing');
  });
});
