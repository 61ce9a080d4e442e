#!/usr/bin/env node
// The e2e suite with a CPU hog beside it: one core busy for the whole run, as on a loaded CI
// machine. The hog is a child of this script, bounded in time, and ended by its PID.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const HOG_MAX_MS = Number(process.env.PODCTL_STRESS_MAX_MS ?? 45 * 60_000);

const up = spawnSync(process.execPath, [join(root, 'bin', 'run.js'), 'runtime', 'up'], { stdio: 'inherit' });
if (up.status !== 0) process.exit(up.status ?? 1);

// A busy loop on one core that ends by itself after HOG_MAX_MS even if this script is killed.
const hog = spawn(
  process.execPath,
  ['-e', `const end = Date.now() + ${HOG_MAX_MS}; let x = 0; while (Date.now() < end) x = (x * 31 + 7) % 1000003;`],
  { stdio: 'ignore' },
);
console.log(`stress: CPU hog on one core, pid ${hog.pid} (ends by itself after ${Math.round(HOG_MAX_MS / 60_000)} min)`);
const stopHog = () => {
  if (hog.exitCode === null && hog.signalCode === null) process.kill(hog.pid, 'SIGKILL');
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    stopHog();
    process.exit(130);
  });
}

const started = Date.now();
const suite = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', join(root, 'dist', 'test', 'e2e')], {
  stdio: 'inherit',
  cwd: root,
});
suite.on('close', (code) => {
  stopHog();
  console.log(
    `stress: e2e suite exited ${code} after ${Math.round((Date.now() - started) / 1000)} s with the hog (pid ${hog.pid}) beside it`,
  );
  process.exit(code ?? 1);
});
