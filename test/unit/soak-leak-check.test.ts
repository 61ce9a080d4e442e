import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leakedMounts } from '../support/soak.js';

const UID = '5e3b6a6c0f1d4b2aa7d9e8f00112233a';
const line = (mountPoint: string) => `512 30 0:77 / ${mountPoint} rw,relatime shared:301 - tmpfs tmpfs rw,size=1024k`;

test("the soak's leak check finds a mount left under a churned pod's UID, and nothing else", () => {
  const root = '/tmp/podctl-soak-x/root';
  const info = [
    line('/proc'),
    line(`${root}/pods/${UID}/volumes/kubernetes.io~empty-dir/scratch`),
    line(`${root}/pods/0123456789abcdef0123456789abcdef/volumes/kubernetes.io~empty-dir/scratch`),
    line(`/elsewhere/pods/${UID}/volumes/x`),
  ].join('\n');
  assert.deepEqual(
    leakedMounts(info, root, new Set([UID])),
    [`${root}/pods/${UID}/volumes/kubernetes.io~empty-dir/scratch`],
    'a leaked mount of a churned pod is reported',
  );
  assert.deepEqual(
    leakedMounts(info, root, new Set(['soak-churn-3'])),
    [],
    'a pod name is in no mount path: the old check could never find a leak',
  );
  assert.deepEqual(
    leakedMounts([line('/proc'), line(`${root}/pods/0123456789abcdef0123456789abcdef/x`)].join('\n'), root, new Set([UID])),
    [],
  );
});
