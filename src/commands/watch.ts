import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { buildKubelet, nodeFlags, watchAgent } from '../cli/node.js';
import { eventLine, eventWorthALine, statusLine } from '../cli/render.js';
import { podTable } from '../cli/table.js';
import { connect } from '../cli/runtime.js';
import { realClock } from '../core/clock.js';
import { FileSource, HttpSource, PodConfigMerger } from '../core/config/index.js';
import { parseDuration } from '../core/cri/endpoint.js';
import { PodctlError, errorMessage } from '../core/errors.js';
import { SyncLoop } from '../core/loop.js';
import { acquireStateLock } from '../core/lock.js';
import { Metrics } from '../core/metrics.js';
import type { SourceObjects } from '../core/objects.js';
import { startStatusServer } from '../core/status/server.js';
import { traceFlags, tracerFor } from '../cli/trace.js';

export class Watch extends PodctlCommand {
  static override summary = 'Run the sync loop over a manifests file or directory (and/or a URL), as a standalone kubelet.';
  static override description = `Follows the manifests as they change (a file or directory, re-read on change and every 20 s; a URL polled
every 20 s) and the runtime as it moves (PLEG relist): adds, updates and removes pods, restarts crashed
containers with backoff, cleans up pods no source wants. One line per pod state change. SIGTERM or Ctrl-C stops
the loop and leaves the pods running, as the kubelet does; --cleanup-on-exit terminates them instead.
While it runs, GET /healthz, /pods, /events and /metrics answer on <root-dir>/podctl.sock (mode 0600).`;
  static override examples = [
    '<%= config.bin %> watch manifests/',
    '<%= config.bin %> watch manifests/ --manifest-url http://127.0.0.1:8080/pods.yaml',
    '<%= config.bin %> watch --manifest-url http://127.0.0.1:8080/pods.yaml --manifest-url-header "Authorization: Bearer t0ken"',
    '<%= config.bin %> watch manifests/ --cleanup-on-exit',
    '<%= config.bin %> watch manifests/ --trace',
    '<%= config.bin %> watch manifests/ --trace -o json | jq -c \'select(.type == "worker") | [.pod.name, .outcome, .durationMs]\'',
    'curl --unix-socket /var/lib/podctl/podctl.sock http://podctl/pods',
  ];
  static override args = { path: Args.string({ description: 'Manifest file or directory to follow.' }) };
  static override flags = {
    ...nodeFlags,
    'manifest-url': Flags.string({ summary: 'Also follow the pods served at this URL.' }),
    'manifest-url-header': Flags.string({ summary: 'HTTP header for --manifest-url, "Name: value" (repeatable).', multiple: true }),
    'file-check-frequency': Flags.string({ summary: 'Safety-net re-read of the manifests path.', default: '20s' }),
    'http-check-frequency': Flags.string({ summary: 'How often --manifest-url is polled.', default: '20s' }),
    'pleg-relist-period': Flags.string({ summary: 'How often the generic PLEG relists the runtime.', default: '1s' }),
    pleg: Flags.string({
      summary: 'generic: relist; evented: the runtime\'s event stream, relisting as a safety net; auto: evented where the runtime has it.',
      options: ['generic', 'evented', 'auto'],
      default: 'auto',
    }),
    'cleanup-on-exit': Flags.boolean({ summary: 'Terminate the pods on exit instead of leaving them running.' }),
    table: Flags.boolean({ summary: 'On a terminal, a live table of the pods (kubectl get pods columns) instead of one line per change.' }),
    ...traceFlags,
    trace: Flags.boolean({ ...traceFlags.trace, exclusive: ['table'] }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Watch);
    if (!args.path && !flags['manifest-url']) {
      throw new PodctlError('nothing to watch', { hint: 'give a manifests path, --manifest-url, or both', exitCode: 2 });
    }
    const headers: Record<string, string> = {};
    for (const h of flags['manifest-url-header'] ?? []) {
      const i = h.indexOf(':');
      if (i <= 0) throw new PodctlError(`--manifest-url-header "${h}": expected "Name: value"`, { exitCode: 2 });
      headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
    }
    // One owner per state dir, before anything else is touched.
    const lock = acquireStateLock(flags['root-dir']);
    const metrics = new Metrics();
    // --trace: the trace is stdout; what watch says otherwise goes to stderr, or is said by the trace.
    const tracer = tracerFor(flags, () => pleg, (line) => this.log(line));
    const say = (line: string) => (tracer ? process.stderr.write(`${line}\n`) : this.log(line));
    const { client } = await connect(flags, (call) => {
      metrics.observeCall(call);
      tracer?.observeCall(call);
    });
    const version = await client.version();
    const kubelet = buildKubelet(client, flags, version.runtimeName, { agent: watchAgent(flags['root-dir']), removeOrphans: true, metrics, trace: tracer });
    tracer?.attach(kubelet);
    const stamp = () => new Date().toISOString().slice(11, 19);
    const relistPeriodMs = parseDuration(flags['pleg-relist-period'], '--pleg-relist-period');
    const pleg =
      flags.pleg === 'generic'
        ? kubelet.createPleg({ relistPeriodMs })
        : kubelet.createEventedPleg({ relistPeriodMs, onFallback: (reason) => say(`${stamp()} PLEG: ${reason}`) });
    const expected: string[] = [];
    const merger = new PodConfigMerger(
      (u) => loop.handleUpdate(u),
      (source, pod, owner) => process.stderr.write(`${stamp()} ${source}: pod ${pod.metadata!.namespace}/${pod.metadata!.name} is already defined by the ${owner} source; ignored\n`),
    );
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
      trace: tracer,
      onPlegEvent: (e) => {
        if (tracer || e.type !== 'ContainerDied' || !e.containerName) return;
        const c = pleg.cache.get(e.id)?.containers.find((x) => x.id === e.data);
        this.log(`${stamp()} ${e.namespace}/${e.name}  ContainerDied ${e.containerName}${c?.exitCode === undefined ? '' : ` (exit ${c.exitCode})`}`);
      },
      onRuntimeState: (up, detail) => say(`${stamp()} runtime ${up ? 'is back' : `is down: ${detail}`}`),
      onHousekeeping: (r) => {
        if (tracer) return;
        for (const p of r.removedPods) this.log(`${stamp()} ${p}  removed (no source wants it)`);
      },
      onError: (err) => process.stderr.write(`${stamp()} error: ${errorMessage(err)}\n`),
    });
    const lastError = new Map<string, string>();
    const live = flags.table && process.stdout.isTTY;
    if (flags.table && !live) process.stderr.write('--table needs a terminal; printing one line per change instead\n');
    const redraw = () => {
      const pods = [...kubelet.pods.values()].map((p) => ({ ...p, status: kubelet.statuses.get(p.metadata!.uid!) }));
      process.stdout.write(`\x1b[2J\x1b[H${stamp()} watching ${[args.path, flags['manifest-url']].filter(Boolean).join(' and ')}\n\n${podTable(pods, { allNamespaces: true })}\n`);
    };
    kubelet.observe({
      onStatus: ({ pod, status }) => (tracer ? undefined : live ? redraw() : this.log(statusLine(pod, status))),
      onSyncError: (pod, err) => {
        const message = errorMessage(err);
        if (lastError.get(pod.metadata!.uid!) === message) return;
        lastError.set(pod.metadata!.uid!, message);
        process.stderr.write(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}: ${message} (retrying with backoff)\n`);
      },
      onTerminated: (pod) => tracer || this.log(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}  terminated and removed`),
    });

    kubelet.events.subscribe((e) => {
      if (!eventWorthALine(e)) return;
      if (live) redraw();
      else process.stderr.write(`${eventLine(e)}\n`);
    });

    const sources: { start(): void; stop(): void }[] = [];
    const onError = (e: { file: string; message: string }) => process.stderr.write(`${stamp()} ${e.message.includes(e.file) ? e.message : `${e.file}: ${e.message}`}\n`);
    const onWarning = (e: { message: string }) => {
      for (const line of e.message.split('\n')) process.stderr.write(`${stamp()} Warning: ${line}\n`);
    };
    if (args.path) {
      expected.push('file');
      sources.push(
        new FileSource({
          path: args.path,
          nodeName: flags['node-name'],
          clock: realClock,
          resyncMs: parseDuration(flags['file-check-frequency'], '--file-check-frequency'),
          onSnapshot: (pods: IPod[], objects: SourceObjects) => {
            kubelet.objects.set('file', objects);
            merger.merge('file', pods);
          },
          onError: (e) => onError(e),
          onWarning,
        }),
      );
    }
    if (flags['manifest-url']) {
      expected.push('http');
      sources.push(
        new HttpSource({
          url: flags['manifest-url'],
          headers,
          nodeName: flags['node-name'],
          clock: realClock,
          pollMs: parseDuration(flags['http-check-frequency'], '--http-check-frequency'),
          onSnapshot: (pods: IPod[], objects: SourceObjects) => {
            kubelet.objects.set('http', objects);
            merger.merge('http', pods);
          },
          onError: (e) => onError(e),
          onWarning,
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
      events: () => kubelet.events.all(),
    });
    loop.start();
    sources.forEach((s) => s.start());
    say(`${stamp()} watching ${[args.path, flags['manifest-url']].filter(Boolean).join(' and ')}; status on ${socket}`);

    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    sources.forEach((s) => s.stop());
    server.close();
    if (flags['cleanup-on-exit']) {
      say(`${stamp()} stopping: terminating ${kubelet.pods.size} pod(s)`);
      pleg.stop();
      const uids = [...kubelet.pods.keys()];
      loop.removePods(uids);
      await kubelet.workers.waitIdle();
    } else {
      say(`${stamp()} stopping; pods keep running (--cleanup-on-exit terminates them)`);
    }
    loop.stop();
    await kubelet.workers.waitIdle();
    client.close();
    lock.release();
  }
}
