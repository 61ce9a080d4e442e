// The e2e tests drive the real kubectl. Where the machine has none, this says so and installs
// Debian's (kubernetes-client, an older kubectl: the tests that need a newer one say why they skip).
import { spawnSync } from 'node:child_process';

const has = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
if (has.status === 0) process.exit(0);
process.stderr.write("no kubectl on this machine: installing Debian's kubernetes-client for the e2e tests\n");
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'kubernetes-client']]) {
  const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    process.stderr.write(`apt-get ${args.join(' ')} failed (exit ${r.status}); the kubectl tests will skip\n`);
    process.exit(0);
  }
}
