import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dump, loadAll } from 'js-yaml';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import { streamAttach } from './attach.js';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';
import { AgentClient } from '../core/node/client.js';
import { referencedObjects } from '../core/pod/references.js';
import { podSandboxConfig } from '../core/kuberuntime/config.js';
import { ephemeralContainerConfig } from '../core/kuberuntime/ephemeral.js';
import * as L from '../core/kuberuntime/labels.js';
import { readLogFile } from '../core/logs/index.js';
import type { RuntimePod } from '../core/podview/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The v1 Pod a sandbox was made for, from its labels and its spec copy. */
function podOf(rp: RuntimePod): IPod {
  const own = Object.fromEntries(
    Object.entries(rp.sandbox.labels).filter(([k]) => !k.startsWith('io.kubernetes.') && !k.startsWith('io.podctl.')),
  );
  const annotations = { ...rp.sandbox.annotations };
  delete annotations[L.POD_SPEC_ANNOTATION];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: rp.runtime.name, namespace: rp.runtime.namespace, uid: rp.runtime.uid, labels: own, annotations },
    spec: rp.spec,
  };
}

type Doc = { kind?: string; metadata?: { name?: string; namespace?: string } };

/**
 * What the copy takes with it besides its pod: the ConfigMaps and Secrets of its namespace that it
 * names, and its RuntimeClass, from the file the original came from: its applied file (a pod handed
 * to the agent) or the manifest the agent read it from (a watch's path). Without them the copy would
 * find the original's only for as long as the original stays.
 */
export async function carriedObjects(
  spec: IPod['spec'] & object,
  namespace: string,
  name: string,
  rootDir: string,
): Promise<{ docs: Doc[]; from?: string; missing: string[] }> {
  const [{ appliedFileName }, { CONFIG_FILE_ANNOTATION }] = await Promise.all([
    import('../core/node/applied.js'),
    import('../core/pod/load.js'),
  ]);
  const refs = referencedObjects(spec);
  const wanted = [
    ...[...refs.configMaps].map((n) => `ConfigMap ${n}`),
    ...[...refs.secrets].map((n) => `Secret ${n}`),
    ...(spec.runtimeClassName ? [`RuntimeClass ${spec.runtimeClassName}`] : []),
  ];
  if (!wanted.length) return { docs: [], missing: [] };
  const files = [join(rootDir, 'applied', appliedFileName(namespace, name))];
  const recorded = (await new AgentClient(rootDir).pods().catch(() => [])).find(
    (p) => p.metadata?.namespace === namespace && p.metadata?.name === name,
  );
  const file = recorded?.metadata?.annotations?.[CONFIG_FILE_ANNOTATION];
  if (file) files.push(file);
  for (const from of files) {
    let text: string;
    try {
      text = readFileSync(from, 'utf8');
    } catch {
      continue;
    }
    const docs = (loadAll(text) as Doc[]).filter((d): d is Doc => !!d && typeof d === 'object');
    const wantedDoc = (d: Doc) =>
      ((d.kind === 'ConfigMap' || d.kind === 'Secret') &&
        (d.metadata?.namespace || 'default') === namespace &&
        wanted.includes(`${d.kind} ${d.metadata?.name}`)) ||
      (d.kind === 'RuntimeClass' && wanted.includes(`RuntimeClass ${d.metadata?.name}`));
    const found = docs.filter(wantedDoc);
    return { docs: found, from, missing: wanted.filter((w) => !found.some((d) => `${d.kind} ${d.metadata?.name}` === w)) };
  }
  return { docs: [], missing: wanted };
}

/**
 * kubectl debug --copy-to: the pod's recorded spec under a new name with the
 * debug container appended, started as `run --detach` starts a file's pods, with
 * the ConfigMaps, Secrets and RuntimeClass it names from the original's file.
 */
export async function copyDebugPod(
  client: CriClient,
  rp: RuntimePod,
  copyName: string,
  container: IContainer,
  flags: { namespace: string; 'root-dir': string; 'runtime-endpoint'?: string },
): Promise<number> {
  if (
    await client
      .listPodSandbox({
        labelSelector: { [L.POD_NAME_LABEL]: copyName, [L.POD_NAMESPACE_LABEL]: flags.namespace, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE },
      })
      .then((l) => l.length > 0)
  ) {
    throw new PodctlError(`--copy-to ${copyName}: a pod of that name already exists in namespace ${flags.namespace}`, { exitCode: 2 });
  }
  const source = podOf(rp);
  const spec = { ...rp.spec, containers: [...rp.spec.containers, container] };
  delete spec.nodeName;
  const manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: copyName, namespace: flags.namespace, labels: source.metadata?.labels },
    spec,
  };
  const carried = await carriedObjects(spec, flags.namespace, rp.runtime.name, flags['root-dir']);
  if (carried.missing.length) {
    process.stderr.write(
      `warning: --copy-to ${copyName}: ${carried.missing.join(', ')} not found in ` +
        `${carried.from ?? `the original's applied file or manifest`}: the copy uses what the agent holds\n`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'podctl-debug-copy-'));
  const file = join(dir, `${copyName}.yaml`);
  // Written only here, readable by root alone: it may hold Secrets.
  writeFileSync(file, [manifest, ...carried.docs].map((d) => dump(d, { noRefs: true, lineWidth: -1 })).join('---\n'), { mode: 0o600 });
  try {
    const args = [
      process.argv[1]!,
      'run',
      '--detach',
      file,
      '--root-dir',
      flags['root-dir'],
      ...(flags['runtime-endpoint'] ? ['--runtime-endpoint', flags['runtime-endpoint']] : []),
    ];
    const res = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    if (res.status !== 0) throw new PodctlError(`--copy-to ${copyName}: starting the copy failed (exit ${res.status ?? res.signal})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const withObjects = carried.docs.length
    ? ` (with ${carried.docs.map((d) => `${d.kind} ${d.metadata?.name}`).join(', ')} from ${carried.from})`
    : '';
  process.stderr.write(`Created pod ${copyName}, a copy of ${rp.runtime.name} with debug container ${container.name}${withObjects}\n`);
  if (!container.stdin) return 0;
  const copy = await client.listContainers({
    labelSelector: { [L.POD_NAME_LABEL]: copyName, [L.POD_NAMESPACE_LABEL]: flags.namespace, [L.CONTAINER_NAME_LABEL]: container.name },
  });
  const newest = copy.sort((a, b) => b.createdAt - a.createdAt)[0];
  if (!newest) throw new PodctlError(`--copy-to ${copyName}: container ${container.name} was not created`);
  return attachDebugContainer(client, newest.id, true, container.tty === true);
}

export async function createDebugContainer(
  client: CriClient,
  rp: RuntimePod,
  name: string,
  image: string,
  cmd: string[],
  targetId: string | undefined,
  stdin: boolean,
  tty: boolean,
): Promise<string> {
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
  if (!status)
    throw new PodctlError(`debug: the command still runs after ${timeoutMs / 1000}s`, {
      hint: 'see its output with `podctl logs`, or use -it',
    });
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
