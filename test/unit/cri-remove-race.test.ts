import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CriError, GrpcStatus, ignoreNotFound } from '../../src/core/cri/errors.js';

test('a removal another caller already has under way counts as gone, as NOT_FOUND; other failures still throw', async () => {
  const removing = new CriError(
    'RemoveContainer failed: failed to set removing state for container "fe90": container is already in removing state',
    { code: GrpcStatus.UNKNOWN, method: 'RemoveContainer', endpoint: 'unix:///x', details: '' },
  );
  assert.equal(await ignoreNotFound(Promise.reject(removing)), undefined);
  assert.equal(
    await ignoreNotFound(
      Promise.reject(new CriError('gone', { code: GrpcStatus.NOT_FOUND, method: 'RemoveContainer', endpoint: 'unix:///x', details: '' })),
    ),
    undefined,
  );
  const other = new CriError('RemoveContainer failed: device or resource busy', {
    code: GrpcStatus.UNKNOWN,
    method: 'RemoveContainer',
    endpoint: 'unix:///x',
    details: '',
  });
  await assert.rejects(ignoreNotFound(Promise.reject(other)), other);
});
