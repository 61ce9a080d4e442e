import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PodCache } from '../../src/core/pleg/cache.js';
import { emptyPodStatus, type RuntimePodStatus } from '../../src/core/container/types.js';

const status = (uid: string, at: number): RuntimePodStatus => ({ ...emptyPodStatus(uid, uid, 'default', at), timestamp: at });

test('GetNewerThan: an entry known good after the time is served; an older one is read again, or waited for until a set or a relist', async () => {
  const cache = new PodCache();
  cache.set('a', status('a', 100), 100);
  assert.equal((await cache.getNewerThan('a', 50)).timestamp, 100, 'set after the last sync: served');

  let reads = 0;
  const read = async () => (reads++, status('a', 300));
  assert.equal((await cache.getNewerThan('a', 200, { read })).timestamp, 300, 'older than the last sync: read');
  assert.equal(reads, 1);

  // With no read of its own, the reader waits: a relist marking the cache current after the time answers it.
  let answered = undefined as RuntimePodStatus | undefined;
  const waiting = cache.getNewerThan('a', 400).then((s) => (answered = s));
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, undefined, 'nothing newer yet');
  cache.updateTime(350);
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, undefined, 'a relist begun before the time does not answer');
  cache.updateTime(450);
  assert.equal((await waiting).uid, 'a');
});

test('GetNewerThan for a pod never synced: an entry left from a previous life is read again; none, with the PLEG knowing nothing of it, is empty', async () => {
  const cache = new PodCache();
  let nothing = false;
  cache.trackAbsence(() => nothing);
  cache.set('old', status('old', 100), 100);
  let reads = 0;
  const read = async () => (reads++, status('x', 200));
  const empty = () => status('new', 0);
  await cache.getNewerThan('old', undefined, { read, empty });
  assert.equal(reads, 1, 'the stale entry is not trusted');
  await cache.getNewerThan('new', undefined, { read, empty });
  assert.equal(reads, 2, 'the PLEG has not said the runtime holds nothing of it: read');
  nothing = true;
  assert.equal((await cache.getNewerThan('new', undefined, { read, empty })).uid, 'new');
  assert.equal(reads, 2, 'empty without a read');
});

test('setIfNewer: a slower read never replaces one that began later', () => {
  const cache = new PodCache();
  cache.setIfNewer('a', status('a', 200), 200);
  cache.setIfNewer('a', status('a', 100), 100);
  assert.equal(cache.get('a')?.timestamp, 200);
  cache.setIfNewer('a', status('a', 300), 300);
  assert.equal(cache.get('a')?.timestamp, 300);
});
