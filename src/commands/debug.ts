import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dump } from 'js-yaml';
import { Args, Flags } from '@oclif/core';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { chooseContainer, namespaceFlag, openPodView, podArg, podViewFlags, requirePod, requireRunning } from '../cli/podview.js';
import type { CriClient } from '../core/cri/client.js';
import { parseDuration } from '../core/cri/endpoint.js';
import { PodctlError } from '../core/errors.js';
import { streamExec } from '../core/exec/stream.js';
import { podSandboxConfig } from '../core/kuberuntime/config.js';
import { ephemeralContainerConfig } from '../core/kuberuntime/ephemeral.js';
import * as L from '../core/kuberuntime/labels.js';
import { readLogFile } from '../core/logs/index.js';
import type { RuntimePod } from '../core/podview/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The v1 Pod a sandbox was made for, from its labels and its spec copy. */
function podOf(rp: RuntimePod): IPod {
  const own = Object.fromEntries(Object.entries(rp.sandbox.labels).filter(([k]) => !k.startsWith('io.kubernetes.') && !k.startsWith('io.podctl.')));
  const annotations = { ...rp.sandbox.annotations };
  delete annotations[L.POD_SPEC_ANNOTATION];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: rp.runtime.name, namespace: rp.runtime.namespace, uid: rp.runtime.uid, labels: own, annotations },
    spec: rp.spec,
  };
}

export class Debug extends PodctlCommand {
  static override summary = "Run a debug container in a running pod's sandbox (kubectl debug's ephemeral containers).";
  static override description = `The container joins the pod's network and IPC namespaces; with --target it also joins that container's
PID namespace, so ps shows the target's processes. It shows under ephemeralContainerStatuses in get -o json and
under "Ephemeral Containers" in describe; it is never restarted, never counts toward the pod's phase, readiness or
restarts, and goes with the pod.
With -i/-t: attaches to it (Ctrl-D or exit ends it). With a command and no -i/-t: waits for it to end, prints its
output and exits with its exit code. Without either: starts it and prints its name.`;
  static override examples = [
    '<%= config.bin %> debug web -it --image=busybox:1.36 --target=app',
    '<%= config.bin %> debug web --image=busybox:1.36 --target=app -- ps ax',
    '<%= config.bin %> debug web --image=busybox:1.36 -c probe -- wget -qO- 127.0.0.1:8080/healthz',
    '<%= config.bin %> debug web --copy-to=web-debug --image=busybox:1.36 -c shell -it',
  ];
  static override strict = false;
  static override baseFlags = {
    ...PodctlCommand.baseFlags,
    'image-endpoint': Flags.string({ summary: 'CRI image service endpoint (defaults to the runtime endpoint).', helpGroup: 'GLOBAL' }),
  };
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    image: Flags.string({ summary: 'Image of the debug container.', required: true }),
    target: Flags.string({ summary: "Share this container's PID namespace." }),
    container: Flags.string({ char: 'c', summary: 'Name of the debug container (default: debugger-XXXXX).' }),
    stdin: Flags.boolean({ char: 'i', summary: "Keep the container's stdin open and attach to it." }),
    tty: Flags.boolean({ char: 't', summary: 'Give the container a terminal.' }),
    timeout: Flags.string({ summary: 'With a command and no -i/-t: how long to wait for it to end.', default: '5m' }),
    'copy-to': Flags.string({ summary: 'Start a copy of the pod under this name with the debug container added, and leave the original alone.' }),
  };

  async run(): Promise<void> {
    const argv = [...this.argv];
    const dash = argv.indexOf('--');
    const cmd = dash < 0 ? [] : argv.slice(dash + 1);
    const { args, flags } = await this.parse(Debug, dash < 0 ? argv : argv.slice(0, dash));
    const name = podArg(args.pod);
    const { view, client } = await openPodView(flags);
    let code = 0;
    try {
      const rp = await requirePod(view, flags.namespace, name);
      if (rp.sandbox.state !== 'SANDBOX_READY') throw new PodctlError(`pod "${name}" is not running (its sandbox is not ready)`);
      const targetId = flags.target === undefined ? undefined : requireRunning(rp, chooseContainer(rp, flags.target, '--target')).id;
      const debugName = flags.container ?? `debugger-${randomBytes(3).toString('hex').slice(0, 5)}`;
      const taken = [...rp.runtime.containers, ...(rp.runtime.ephemeral ?? [])].map((c) => c.name);
      if (taken.includes(debugName) || rp.spec.containers.some((c) => c.name === debugName)) {
        throw new PodctlError(`-c ${debugName}: pod "${name}" already has a container of that name`, { exitCode: 2 });
      }
      if (flags['copy-to']) {
        code = await this.copyTo(client, rp, flags['copy-to'], { name: debugName, image: flags.image, ...(cmd.length ? { command: cmd } : {}), stdin: flags.stdin || flags.tty, tty: flags.tty }, flags);
        return;
      }
      const id = await this.create(client, rp, debugName, flags.image, cmd, targetId, flags.stdin, flags.tty);
      process.stderr.write(`Created debug container ${debugName}${flags.target ? ` targeting ${flags.target}` : ''}\n`);
      if (flags.stdin || flags.tty) code = await this.attach(client, id, flags.stdin, flags.tty);
      else if (cmd.length) code = await this.waitAndPrint(client, id, parseDuration(flags.timeout, '--timeout'));
      else this.log(debugName);
    } finally {
      client.close();
    }
    if (code !== 0) this.exit(code);
  }

  /**
   * kubectl debug --copy-to: the pod's recorded spec under a new name with the
   * debug container appended, started as `run --detach` starts a file's pods
   * (ConfigMaps and Secrets of the original's file are not carried over).
   */
  private async copyTo(client: CriClient, rp: RuntimePod, copyName: string, container: IContainer, flags: { namespace: string; 'root-dir': string; 'runtime-endpoint'?: string }): Promise<number> {
    if (await client.listPodSandbox({ labelSelector: { [L.POD_NAME_LABEL]: copyName, [L.POD_NAMESPACE_LABEL]: flags.namespace, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE } }).then((l) => l.length > 0)) {
      throw new PodctlError(`--copy-to ${copyName}: a pod of that name already exists in namespace ${flags.namespace}`, { exitCode: 2 });
    }
    const source = podOf(rp);
    const spec = { ...rp.spec, containers: [...rp.spec.containers, container] };
    delete spec.nodeName;
    const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: copyName, namespace: flags.namespace, labels: source.metadata!.labels }, spec };
    const dir = mkdtempSync(join(tmpdir(), 'podctl-debug-copy-'));
    const file = join(dir, `${copyName}.yaml`);
    writeFileSync(file, dump(manifest, { noRefs: true, lineWidth: -1 }));
    try {
      const args = [process.argv[1]!, 'run', '--detach', file, '--root-dir', flags['root-dir'], ...(flags['runtime-endpoint'] ? ['--runtime-endpoint', flags['runtime-endpoint']] : [])];
      const res = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
      if (res.status !== 0) throw new PodctlError(`--copy-to ${copyName}: starting the copy failed (exit ${res.status ?? res.signal})`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    process.stderr.write(`Created pod ${copyName}, a copy of ${rp.runtime.name} with debug container ${container.name}\n`);
    if (!container.stdin) return 0;
    const copy = await client.listContainers({ labelSelector: { [L.POD_NAME_LABEL]: copyName, [L.POD_NAMESPACE_LABEL]: flags.namespace, [L.CONTAINER_NAME_LABEL]: container.name } });
    const newest = copy.sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!newest) throw new PodctlError(`--copy-to ${copyName}: container ${container.name} was not created`);
    return this.attach(client, newest.id, true, container.tty === true);
  }

  private async create(client: CriClient, rp: RuntimePod, name: string, image: string, cmd: string[], targetId: string | undefined, stdin: boolean, tty: boolean): Promise<string> {
    const pod = podOf(rp);
    // The pod's log directory, as its containers were given it (<logRoot>/<ns>_<name>_<uid>/<container>/<n>.log).
    const logPath = rp.runtime.containers.find((c) => c.logPath)?.logPath;
    if (!logPath) throw new PodctlError(`pod "${rp.runtime.name}" has no container with a log file to place the debug container's beside`);
    const logRoot = dirname(dirname(dirname(logPath)));
    const sandboxConfig = podSandboxConfig(pod, rp.sandbox.metadata?.attempt ?? 0, logRoot, rp.sandbox.labels[L.AGENT_LABEL]);
    const imageRef = (await client.imageStatus(image))?.id ?? (await client.pullImage(image, sandboxConfig));
    const container: IContainer = { name, image, ...(cmd.length ? { command: cmd } : {}), stdin: stdin || tty, stdinOnce: stdin || tty, tty };
    const config = ephemeralContainerConfig({ pod, container, imageRef, targetId });
    const id = await client.createContainer(rp.sandbox.id, config, sandboxConfig);
    await client.startContainer(id);
    return id;
  }

  private async attach(client: CriClient, id: string, stdin: boolean, tty: boolean): Promise<number> {
    const url = await client.attach({ containerId: id, stdin: stdin || tty, tty, stdout: true, stderr: !tty });
    const input = process.stdin;
    const raw = tty && input.isTTY;
    if (raw) input.setRawMode(true);
    try {
      await streamExec(url, { stdin: stdin || tty ? input : undefined, stdout: process.stdout, stderr: process.stderr });
    } catch (err) {
      throw new PodctlError(`debug: attach: ${(err as Error).message}`, { cause: err });
    } finally {
      if (raw) input.setRawMode(false);
      input.pause();
    }
    return (await this.exited(client, id, 10_000))?.exitCode ?? 0;
  }

  private async exited(client: CriClient, id: string, timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = (await client.containerStatus(id)).status;
      if (status?.state === 'CONTAINER_EXITED') return status;
      if (Date.now() > deadline) return undefined;
      await sleep(200);
    }
  }

  private async waitAndPrint(client: CriClient, id: string, timeoutMs: number): Promise<number> {
    const status = await this.exited(client, id, timeoutMs);
    if (!status) throw new PodctlError(`debug: the command still runs after ${timeoutMs / 1000}s`, { hint: 'see its output with `podctl logs`, or use -it' });
    // The runtime may report the exit a moment before the last output reaches the log file.
    let records = await readLogFile(status.logPath);
    for (let i = 0; i < 10; i++) {
      await sleep(100);
      const again = await readLogFile(status.logPath);
      if (again.length === records.length) break;
      records = again;
    }
    for (const r of records) (r.stream === 'stderr' ? process.stderr : process.stdout).write(`${r.text}\n`);
    return status.exitCode;
  }
}
