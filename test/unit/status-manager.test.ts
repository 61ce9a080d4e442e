import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusManager } from '../../src/core/status/manager.js';

test('statusManager: set returns the status it replaces; waiting reasons are kept until SyncPod clears them; forget drops both', () => {
  const m = new StatusManager();
  assert.equal(m.set('u1', { phase: 'Pending' }), undefined);
  assert.deepEqual(m.set('u1', { phase: 'Running' }), { phase: 'Pending' });
  assert.deepEqual(m.get('u1'), { phase: 'Running' });
  m.recordWaiting(
    'u1',
    new Map([
      ['app', { reason: 'ErrImagePull', message: 'not found' }],
      ['side', null],
    ]),
  );
  assert.deepEqual(m.waitingReason('u1', 'app'), { reason: 'ErrImagePull', message: 'not found' });
  assert.equal(m.waitingReason('u1', 'side'), undefined);
  m.recordWaiting('u1', new Map([['app', null]]));
  assert.equal(m.waitingReason('u1', 'app'), undefined, 'a container SyncPod started no longer waits');
  m.recordWaiting('u1', new Map([['app', { reason: 'CrashLoopBackOff' }]]));
  m.forget('u1');
  assert.equal(m.get('u1'), undefined);
  assert.equal(m.waitingReason('u1', 'app'), undefined);
  assert.deepEqual(m.all(), []);
});
