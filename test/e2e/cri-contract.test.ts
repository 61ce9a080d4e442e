import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CriClient } from '../../src/core/cri/client.js';
import { criContractCases } from '../../fakecri/index.js';
import { POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, removeE2EPods } from '../support/e2e.js';

// The same client-level cases the fake runtime passes (test/unit/fake-runtime.test.ts), on containerd.
describe('the CRI contract cases against the real runtime', () => {
  let client: CriClient;
  const run = Date.now().toString(36);
  before(async () => {
    client = e2eClient();
    await removeE2EPods(client);
  });
  after(async () => {
    await removeE2EPods(client);
    client.close();
  });

  const ctx = {
    image: 'busybox:1.36',
    missingImage: 'docker.io/library/nosuchimage:1',
    podName: (s: string) => `contract-${s}-${run}`,
    namespace: E2E_NAMESPACE,
  };
  for (const c of criContractCases()) {
    test(c.name, async () => {
      await c.run(client, ctx);
      const left = await client.listPodSandbox({ labelSelector: { [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
      assert.deepEqual(
        left.map((s) => s.metadata?.name),
        [],
        'the case removed every sandbox it made',
      );
    });
  }
});
