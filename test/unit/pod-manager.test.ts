import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { PodManager } from '../../src/core/pod-manager/index.js';
import { staticPodUID } from '../../src/core/pod/uid.js';

const pod = (name: string, uid: string, namespace = 'default'): IPod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace, name, uid },
});

test('the pod manager: by UID and by namespace/name, the sources of each, and the static-pod UID rule', () => {
  const m = new PodManager('node-a');
  const web = pod('web', staticPodUID('node-a', 'default', 'web'));
  m.addOrUpdatePod(web, 'file');
  m.addOrUpdatePod(web, 'api');
  m.addOrUpdatePod(pod('web', 'u-lab', 'lab'));
  assert.equal(m.getPodByUID(web.metadata!.uid!), web);
  assert.equal(m.getPodByFullName('default', 'web'), web);
  assert.equal(m.getPodByFullName('lab', 'web')?.metadata?.uid, 'u-lab');
  assert.equal(m.getPodByFullName('default', 'db'), undefined);
  assert.deepEqual([...m.sourcesOf(web.metadata!.uid!)].sort(), ['api', 'file']);
  assert.equal(m.isStaticPod(web), true);
  assert.equal(m.isStaticPod(pod('web', 'explicit-uid')), false);
});

test('a new UID under a namespace/name takes the name over; removing either one leaves the name to the other', () => {
  const m = new PodManager('node-a');
  m.addOrUpdatePod(pod('web', 'old'));
  m.addOrUpdatePod(pod('web', 'new'));
  assert.equal(m.pods.size, 2, 'the old UID stays until its worker has killed it');
  assert.equal(m.getPodByFullName('default', 'web')?.metadata?.uid, 'new');
  m.removePod('new');
  assert.equal(m.getPodByFullName('default', 'web')?.metadata?.uid, 'old', 'the UID still held keeps the name');
  m.removePod('old');
  assert.equal(m.getPodByFullName('default', 'web'), undefined);
  assert.deepEqual([...m.sourcesOf('old')], []);

  m.addOrUpdatePod(pod('db', 'first'));
  m.addOrUpdatePod(pod('db', 'second'));
  m.removePod('first');
  assert.equal(m.getPodByFullName('default', 'db')?.metadata?.uid, 'second');
});
