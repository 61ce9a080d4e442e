import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTAINER_LOG_MAX_FILES, IMAGE_GC_HIGH_THRESHOLD, IMAGE_GC_LOW_THRESHOLD, nodeFlags } from '../../src/cli/node-flags.js';
import { nodeFlags as fromNode } from '../../src/cli/node.js';
import { DEFAULT_CONTAINER_LOG_MAX_FILES } from '../../src/core/logs/rotation.js';
import { DEFAULT_IMAGE_GC_HIGH_THRESHOLD, DEFAULT_IMAGE_GC_LOW_THRESHOLD } from '../../src/core/kuberuntime/image-gc.js';

test("the node flags' defaults are the kubelet's image GC and log rotation defaults, which their module does not load", () => {
  assert.equal(IMAGE_GC_HIGH_THRESHOLD, DEFAULT_IMAGE_GC_HIGH_THRESHOLD);
  assert.equal(IMAGE_GC_LOW_THRESHOLD, DEFAULT_IMAGE_GC_LOW_THRESHOLD);
  assert.equal(CONTAINER_LOG_MAX_FILES, DEFAULT_CONTAINER_LOG_MAX_FILES);
  assert.equal(nodeFlags['image-gc-high-threshold'].default, DEFAULT_IMAGE_GC_HIGH_THRESHOLD);
  assert.equal(nodeFlags['image-gc-low-threshold'].default, DEFAULT_IMAGE_GC_LOW_THRESHOLD);
  assert.equal(nodeFlags['container-log-max-files'].default, DEFAULT_CONTAINER_LOG_MAX_FILES);
  // src/cli/node.ts gives the same flags to the commands that run a node.
  assert.equal(fromNode, nodeFlags);
});
