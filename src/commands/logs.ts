import { once } from 'node:events';
import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { parseDuration } from '../core/util/duration.js';
import { PodctlError } from '../core/errors.js';
import type { LogRecord, LogSelection } from '../core/logs/index.js';
import { prose } from '../cli/prose.js';

export class Logs extends PodctlCommand {
  static override summary = 'Print the logs of a container in a pod, from the CRI log files.';
  static override description = prose`Reads the files the runtime writes
(<log-root>/<namespace>_<name>_<uid>/<container>/<restartCount>.log, the path each container's CRI status names), joining partial lines.
-p prints the previous instance (the file of restartCount - 1). -f follows the container across restarts (moving on to the next instance's
file) and log rotation, until Ctrl-C, the pod is gone, or the container exited for good. Every line goes to stdout, as kubectl prints
them; --timestamps prefixes each with the runtime's RFC3339Nano time.`;
  static override examples = [
    '<%= config.bin %> logs web',
    '<%= config.bin %> logs web -c sidecar --tail 20',
    '<%= config.bin %> logs web -p',
    '<%= config.bin %> logs web -f --since 10m',
    '<%= config.bin %> logs web --all-containers --prefix --timestamps',
  ];
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    container: Flags.string({ char: 'c', summary: "Container (default: the pod's default container)." }),
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing lines as they are written, across restarts and rotation.' }),
    previous: Flags.boolean({ char: 'p', summary: 'The previous instance of the container (before its last restart).' }),
    timestamps: Flags.boolean({ summary: "Prefix each line with the runtime's timestamp (RFC3339Nano)." }),
    tail: Flags.integer({ summary: 'Only the last N lines (-1: all).', default: -1 }),
    since: Flags.string({ summary: 'Only lines newer than this duration, e.g. 10s, 5m, 1h.' }),
    'all-containers': Flags.boolean({ summary: "Every container's logs (init containers first)." }),
    prefix: Flags.boolean({ summary: 'Prefix each line with [pod/NAME/CONTAINER].' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Logs);
    if (flags.previous && flags.follow)
      throw new PodctlError('--previous and --follow cannot be combined: a previous instance writes no more', { exitCode: 2 });
    if (flags['all-containers'] && flags.container)
      throw new PodctlError('--all-containers and --container cannot be combined', { exitCode: 2 });
    const name = podArg(args.pod);
    const sel: LogSelection = {
      tail: flags.tail,
      sinceMs: flags.since ? Date.now() - parseDuration(flags.since, '--since') : undefined,
    };
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [
      { chooseContainer, containerNames, openPodView, requirePod },
      { followContainerLog, readContainerLogTail, selectRecords, streamContainerLog },
      { followStopper, logFileOf },
    ] = await Promise.all([import('../cli/podview.js'), import('../core/logs/index.js'), import('../cli/logs.js')]);
    const { view, client } = await openPodView(flags);
    try {
      const pod = await requirePod(view, flags.namespace, name);
      const containers = flags['all-containers'] ? containerNames(pod) : [chooseContainer(pod, flags.container)];
      const prefixOf = (c: string) => (flags.prefix || (flags['all-containers'] && containers.length > 1) ? `[pod/${name}/${c}] ` : '');
      /** Writes the lines; true when stdout takes more at once (false: wait for its drain). */
      const write = (c: string, records: LogRecord[]): boolean => {
        if (!records.length) return true;
        const p = prefixOf(c);
        return process.stdout.write(records.map((r) => `${p}${flags.timestamps ? `${r.time} ` : ''}${r.text}\n`).join(''));
      };
      const files = containers.map((c) => ({ container: c, path: logFileOf(pod, c, flags.previous, flags['all-containers']) }));
      if (!flags.follow) {
        for (const f of files) {
          if (!f.path) continue;
          // --tail reads from the end; the whole log is streamed, never held at once.
          if (sel.tail !== undefined && sel.tail >= 0) write(f.container, await readContainerLogTail(f.path, sel));
          else
            await streamContainerLog(
              f.path,
              async (records) =>
                write(f.container, selectRecords(records, { sinceMs: sel.sinceMs })) || (await once(process.stdout, 'drain')),
            );
        }
        return;
      }
      let interrupted = false;
      const onSignal = () => (interrupted = true);
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const done = followStopper(view, flags.namespace, name, pod.runtime.uid, () => interrupted);
      await Promise.all(
        files.map(async (f) => {
          if (!f.path) return;
          await followContainerLog({
            path: f.path,
            backlog: (records) => write(f.container, records),
            selection: sel,
            onRecords: (records) => write(f.container, records),
            shouldStop: () => done(f.container),
          });
        }),
      );
    } finally {
      client.close();
    }
  }
}
