import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dump } from 'js-yaml';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import { streamAttach } from './attach.js';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';
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

/**
 * kubectl debug --copy-to: the pod's recorded spec under a new name with the
 * debug container appended, started as `run --detach` starts a file's pods
 * (ConfigMaps and Secrets of the original's file are not carried over).
 */
export async function copyDebugPod(client: CriClient, rp: RuntimePod, copyName: string, container: IContainer, flags: { namespace: string; 'root-dir': string; 'runtime-endpoint'?: string }): Promise<number> {
  if (await client.listPodSandbox({ labelSelector: { [L.POD_NAME_LABEL]: copyName, [L.POD_NAMESPACE_LABEL]: flags.namespace, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE } }).then((l) => l.length > 0)) {
    throw new PodctlError(`--copy-to ${copyName}: a pod of that name already exists in namespace ${flags.namespace}`, { exitCode: 2 });
  }
  const source = podOf(rp);
  const spec = { ...rp.spec, containers: [...rp.spec.containers, container] };
  delete spec.nodeName;
  const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: copyName, namespace: flags.namespace, labels: source.metadata?.labels }, spec };
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
  return attachDebugContainer(client, newest.id, true, container.tty === true);
}

export async function createDebugContainer(client: CriClient, rp: RuntimePod, name: string, image: string, cmd: string[], targetId: string | undefined, stdin: boolean, tty: boolean): Promise<string> {
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

export async function attachDebugContainer(client: CriClient, id: string, stdin: boolean, tty: boolean): Promise<number> {
  await streamAttach(client, id, { stdin: stdin || tty, tty, what: 'debug: attach' });
  return (await exited(client, id, 10_000))?.exitCode ?? 0;
}

async function exited(client: CriClient, id: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = (await client.containerStatus(id)).status;
    if (status?.state === 'CONTAINER_EXITED') return status;
    if (Date.now() > deadline) return undefined;
    await sleep(200);
  }
}

export async function printWhenDone(client: CriClient, id: string, timeoutMs: number): Promise<number> {
  const status = await exited(client, id, timeoutMs);
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
