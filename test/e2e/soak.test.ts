import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, removeE2EPods, scratchDir } from '../support/e2e.js';
import { CHATTY_LOG_MAX_BYTES, CHATTY_LOG_MAX_FILES, runSoak } from '../support/soak.js';

/** The CI version of the soak (2 minutes; `npm run bench -- --only soak` runs the 30-minute one). */
const DURATION_MS = Number(process.env.PODCTL_SOAK_MS ?? 120_000);

let client: CriClient;
const dirs = scratchDir('e2e-soak');

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dirs.cleanup();
});

test(
  `soak (${Math.round(DURATION_MS / 1000)} s): 20 pods crash-looping, flapping readiness or steady, under file churn, end as desired with nothing leaked and flat memory`,
  { timeout: DURATION_MS + 240_000 },
  async () => {
    const r = await runSoak({
      client,
      namespace: E2E_NAMESPACE,
      dir: dirs.dir,
      durationMs: DURATION_MS,
      log: (l) => process.stderr.write(`${l}\n`),
    });
    assert.deepEqual(r.notConverged, [], 'every desired pod as desired');
    assert.deepEqual(r.leaked, { sandboxes: 0, containers: 0, mounts: 0 }, 'nothing left of the pods the churn removed');
    assert.ok(r.restarts >= r.pods.crashLooping, `the crash-looping pods were restarted (${r.restarts} restarts)`);
    assert.ok(r.pods.churned >= 3, 'files churned during the run');
    assert.equal(r.watchExitCode, 0, 'watch stopped cleanly');
    assert.deepEqual(
      r.afterRemoval,
      { sandboxes: 0, mounts: 0 },
      'with every manifest removed, watch removed every pod and unmounted every volume',
    );
    assert.ok(r.rss.length >= 3, 'RSS sampled over the run');
    // The chatty pod writes about 200 KB/s: rotation keeps its log directory bounded the whole run.
    assert.ok(r.chattyLogs.length >= 3, "the chatty pod's logs sampled over the run");
    const bound = CHATTY_LOG_MAX_FILES * 1.5 * CHATTY_LOG_MAX_BYTES;
    assert.ok(
      r.chattyLogs.every((s) => s.bytes <= bound),
      `chatty log dir stays under ${bound} bytes: ${r.chattyLogs.map((s) => s.bytes).join(' → ')}`,
    );
    // A leak guard, generous on purpose: the first samples include start-up, the rest must not keep climbing.
    const early = Math.max(...r.rss.slice(0, 2).map((s) => s.mib));
    const last = r.rss.at(-1)!.mib;
    assert.ok(last <= early * 1.5 + 16, `watch RSS stays flat (${r.rss.map((s) => s.mib).join(' → ')} MiB)`);
  },
);
