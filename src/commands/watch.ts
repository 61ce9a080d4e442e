import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { buildKubelet, nodeFlags } from '../cli/node.js';
import { statusLine } from '../cli/render.js';
import { connect } from '../cli/runtime.js';
import { realClock } from '../core/clock.js';
import { FileSource, PodConfigMerger } from '../core/config/index.js';
import { parseDuration } from '../core/cri/endpoint.js';
import { errorMessage } from '../core/errors.js';
import { SyncLoop } from '../core/loop.js';
import { Metrics } from '../core/metrics.js';
import { startStatusServer } from '../core/status/server.js';

const DEFAULT_ROOT_DIR = '/var/lib/podctl';

export class Watch extends PodctlCommand {
  static override summary = 'Run the sync loop over a manifests file or directory, as a standalone kubelet.';
  static override description = `Follows the manifests as they change (a file or directory, re-read on change and every 20 s) and the runtime
as it moves (PLEG relist): adds, updates and removes pods, restarts crashed containers with backoff, cleans up
pods no source wants. One line per pod state change. SIGTERM or Ctrl-C stops
the loop and leaves the pods running, as the kubelet does; --cleanup-on-exit terminates them instead.
While it runs, GET /healthz, /pods and /metrics answer on <root-dir>/podctl.sock (mode 0600).`;
  static override examples = [
    '<%= config.bin %> watch manifests/',
    '<%= config.bin %> watch manifests/ --cleanup-on-exit',
    'curl --unix-socket /var/lib/podctl/podctl.sock http://podctl/pods',
  ];
  static override args = { path: Args.string({ description: 'Manifest file or directory to follow.', required: true }) };
  static override flags = {
    ...nodeFlags,
    'file-check-frequency': Flags.string({ summary: 'Safety-net re-read of the manifests path.', default: '20s' }),
    'pleg-relist-period': Flags.string({ summary: 'How often the runtime is relisted.', default: '1s' }),
    'root-dir': Flags.string({ summary: 'State directory (status socket).', default: DEFAULT_ROOT_DIR, env: 'PODCTL_ROOT_DIR' }),
    'cleanup-on-exit': Flags.boolean({ summary: 'Terminate the pods on exit instead of leaving them running.' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Watch);
    const metrics = new Metrics();
    const { client } = await connect(flags, metrics.observeCall);
    const version = await client.version();
    const kubelet = buildKubelet(client, flags, version.runtimeName, { agent: 'watch', metrics });
    const pleg = kubelet.createPleg({ relistPeriodMs: parseDuration(flags['pleg-relist-period'], '--pleg-relist-period') });
    const stamp = () => new Date().toISOString().slice(11, 19);
    const expected: string[] = [];
    const merger = new PodConfigMerger((u) => loop.handleUpdate(u));
    const loop = new SyncLoop({
      kubelet,
      pleg,
      clock: realClock,
      checkRuntime: async () => {
        const s = await client.status();
        const down = (s.status?.conditions ?? []).filter((c) => c.type === 'RuntimeReady' && !c.status);
        if (down.length) throw new Error(`RuntimeReady is false: ${down[0]!.reason} ${down[0]!.message}`);
      },
      sourcesReady: () => merger.allSourcesReady(expected),
      onRuntimeState: (up, detail) => this.log(`${stamp()} runtime ${up ? 'is back' : `is down: ${detail}`}`),
      onHousekeeping: (r) => {
        for (const p of r.removedPods) this.log(`${stamp()} ${p}  removed (no source wants it)`);
      },
      onError: (err) => process.stderr.write(`${stamp()} error: ${errorMessage(err)}\n`),
    });
    const lastError = new Map<string, string>();
    kubelet.observe({
      onStatus: ({ pod, status }) => this.log(statusLine(pod, status)),
      onSyncError: (pod, err) => {
        const message = errorMessage(err);
        if (lastError.get(pod.metadata!.uid!) === message) return;
        lastError.set(pod.metadata!.uid!, message);
        process.stderr.write(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}: ${message} (retrying with backoff)\n`);
      },
      onTerminated: (pod) => this.log(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}  terminated and removed`),
    });

    const sources: { start(): void; stop(): void }[] = [];
    const onError = (e: { file: string; message: string }) => process.stderr.write(`${stamp()} ${e.message.includes(e.file) ? e.message : `${e.file}: ${e.message}`}\n`);
    {
      expected.push('file');
      sources.push(
        new FileSource({
          path: args.path,
          nodeName: flags['node-name'],
          clock: realClock,
          resyncMs: parseDuration(flags['file-check-frequency'], '--file-check-frequency'),
          onSnapshot: (pods: IPod[]) => merger.merge('file', pods),
          onError: (e) => onError(e),
        }),
      );
    }
    mkdirSync(flags['root-dir'], { recursive: true, mode: 0o700 });
    const socket = join(flags['root-dir'], 'podctl.sock');
    const server = await startStatusServer(socket, {
      pods: () => [...kubelet.pods.values()].map((p) => ({ ...p, status: kubelet.statuses.get(p.metadata!.uid!) })),
      health: () => {
        const plegHealth = pleg.healthy();
        return {
          ok: plegHealth.ok && loop.isRuntimeUp,
          checks: [
            { name: 'pleg', ok: plegHealth.ok, message: plegHealth.message },
            { name: 'runtime', ok: loop.isRuntimeUp, message: 'the runtime does not answer its Status call' },
          ],
        };
      },
      metrics,
    });
    loop.start();
    sources.forEach((s) => s.start());
    this.log(`${stamp()} watching ${args.path}; status on ${socket}`);

    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    sources.forEach((s) => s.stop());
    server.close();
    if (flags['cleanup-on-exit']) {
      this.log(`${stamp()} stopping: terminating ${kubelet.pods.size} pod(s)`);
      pleg.stop();
      const uids = [...kubelet.pods.keys()];
      loop.removePods(uids);
      await kubelet.workers.waitIdle();
    } else {
      this.log(`${stamp()} stopping; pods keep running (--cleanup-on-exit terminates them)`);
    }
    loop.stop();
    await kubelet.workers.waitIdle();
    client.close();
  }
}
