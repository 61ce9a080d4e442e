import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eClient, removeE2EPods } from '../test/support/e2e.js';
import { CHATTY_LOG_MAX_BYTES, CHATTY_LOG_MAX_FILES, runSoak } from '../test/support/soak.js';
import { machineInfo, onCleanup, type BenchContext, type BenchResult } from './lib.js';

const SOAK_NAMESPACE = 'podctl-soak';

/**
 * The soak of the reliability issue, long: the same scenario as the CI test
 * (test/e2e/soak.test.ts, 2 minutes), for 30 minutes (2 in quick mode), with
 * the watch's RSS over time and what was left behind.
 */
export async function soak(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const durationMs = Number(process.env.PODCTL_SOAK_MS ?? (ctx.quick ? 2 : 30) * 60_000);
  const client = e2eClient();
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-soak-'));
  const cleanup = onCleanup('soak pods and scratch dir', async () => {
    await removeE2EPods(client, SOAK_NAMESPACE);
    rmSync(scratch, { recursive: true, force: true });
  });
  try {
    await removeE2EPods(client, SOAK_NAMESPACE);
    const version = await client.version();
    const r = await runSoak({
      client,
      namespace: SOAK_NAMESPACE,
      dir: scratch,
      durationMs,
      sampleMs: ctx.quick ? 10_000 : 60_000,
      log: ctx.log,
    });
    const mibs = r.rss.map((s) => s.mib);
    const settled = mibs.slice(Math.min(2, mibs.length - 1));
    const growth = settled.length > 1 ? settled.at(-1)! - Math.min(...settled) : 0;
    const leakedTotal = r.leaked.sandboxes + r.leaked.containers + r.leaked.mounts + r.afterRemoval.sandboxes + r.afterRemoval.mounts;
    const rows = [
      {
        name: 'duration',
        value: `${Math.round(r.durationMs / 60_000)} min (${r.pods.steady} steady, 1 chatty, ${r.pods.crashLooping} crash-looping, ${r.pods.flapping} flapping, ${r.pods.churned} churned)`,
        about: 'a real podctl watch over these pods on the embedded containerd, files churning every sample',
      },
      {
        name: 'restarts of crash-looping containers',
        value: String(r.restarts),
        about: 'CrashLoopBackOff at work: restarts counted from the runtime at the end',
      },
      {
        name: 'pods not as desired at the end',
        value: String(r.notConverged.length),
        target: '0',
        met: r.notConverged.length === 0,
        about: 'each desired pod: one ready sandbox, its container running (or crash-looping), at most two instances kept',
      },
      {
        name: 'objects leaked',
        value: `${leakedTotal} (${r.leaked.sandboxes} sandboxes, ${r.leaked.containers} containers, ${r.leaked.mounts + r.afterRemoval.mounts} mounts, ${r.afterRemoval.sandboxes} sandboxes after every file was removed)`,
        target: '0',
        met: leakedTotal === 0,
        about: 'sandboxes, containers and tmpfs mounts of pods no file wants any more, read from the CRI and mountinfo',
      },
      {
        name: 'chatty pod log dir over time',
        value: r.chattyLogs.map((c) => `${(c.bytes / 2 ** 20).toFixed(1)}`).join(' → ') + ' MiB',
        target: `bounded (≤ ${((CHATTY_LOG_MAX_FILES * 1.5 * CHATTY_LOG_MAX_BYTES) / 2 ** 20).toFixed(1)} MiB)`,
        met: r.chattyLogs.every((c) => c.bytes <= CHATTY_LOG_MAX_FILES * 1.5 * CHATTY_LOG_MAX_BYTES),
        about: `one pod writing about 200 KB/s under --container-log-max-size ${CHATTY_LOG_MAX_BYTES >> 20}Mi --container-log-max-files ${CHATTY_LOG_MAX_FILES}`,
      },
      {
        name: 'watch RSS over time',
        value: mibs.map((m) => `${m}`).join(' → ') + ' MiB',
        about: `the watch process's VmRSS, sampled every ${ctx.quick ? 10 : 60} s`,
      },
      {
        name: 'watch RSS growth after start-up',
        value: `${growth.toFixed(1)} MiB`,
        target: 'flat (≤ 32 MiB)',
        met: growth <= 32,
        about: 'from the lowest sample after the first two to the last one',
      },
    ];
    const findings: string[] = [];
    if (r.notConverged.length) findings.push(`not as desired at the end: ${r.notConverged.join('; ')}`);
    if (leakedTotal) findings.push(`left behind: ${JSON.stringify({ ...r.leaked, afterRemoval: r.afterRemoval })}`);
    if (growth > 32) findings.push(`watch RSS grew by ${growth.toFixed(1)} MiB over the run`);
    return {
      name: 'soak',
      title: 'Soak: 20 pods crash-looping, flapping and churning under a real watch',
      quick: ctx.quick,
      machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
      rows,
      findings,
      notes: ['The CI runs the same scenario for 2 minutes (test/e2e/soak.test.ts, PODCTL_SOAK_MS).'],
      data: { ...r },
      durationS: (Date.now() - began) / 1000,
    };
  } finally {
    await cleanup();
    client.close();
  }
}
