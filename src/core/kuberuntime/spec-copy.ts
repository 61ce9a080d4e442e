import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { checkComponent } from '../util/safe-path.js';
import { fnv32a } from './hash.js';
import * as L from './labels.js';

/**
 * The compact spec copy of each container (what its hash is made from, for diffs, resize, inspect and
 * the pod views), kept in the pod's directory as <pod dir>/containers/<name>/<hash>.spec.json rather
 * than on the container record: an annotation is in every ListContainers answer, and at 5,000 pods the
 * copies were a third of every relist's bytes. The file is named by the container's hash annotation
 * (fnv32a of the very same text), so any process that can read the container's status and its
 * sandbox's recorded pod directory finds it, whichever --root-dir made it; a file whose text does not
 * hash to its name (a torn write) is no copy. Containers podctl made without a pod directory (no
 * --root-dir), debug containers, and those an older podctl made still carry the annotation.
 */
const HASH = /^[0-9a-f]{8}$/;

/** Where a container's spec copy lives, or undefined when the pod directory or hash cannot name one. */
export function specCopyPath(podDir: string, containerName: string, hash: string): string | undefined {
  if (!isAbsolute(podDir) || !HASH.test(hash)) return undefined;
  try {
    return join(podDir, 'containers', checkComponent(containerName, 'container name'), `${hash}.spec.json`);
  } catch {
    return undefined;
  }
}

/** Bound on remembered copies: past it the memory starts again (each is re-read once). */
const MAX_REMEMBERED = 100_000;

/**
 * Writes and reads spec copies, remembering each by pod directory: a copy never changes for its
 * name (the hash is of its text), so a process reads each one once, and the one that wrote it never.
 */
export class ContainerSpecCopies {
  private readonly byPodDir = new Map<string, Map<string, string>>();
  private size = 0;

  /** Records the copy before the container is created; returns its hash (the container's hash annotation). */
  async write(podDir: string, containerName: string, specJSON: string): Promise<string> {
    const hash = fnv32a(specJSON);
    const path = specCopyPath(podDir, containerName, hash);
    if (!path) throw new Error(`cannot record the spec of container ${JSON.stringify(containerName)} under ${podDir}`);
    if (this.known(podDir, containerName, hash) === undefined) {
      await mkdir(join(path, '..'), { recursive: true, mode: 0o750 });
      await writeFile(path, specJSON, { mode: 0o640 });
      this.remember(podDir, containerName, hash, specJSON);
    }
    return hash;
  }

  /** The copy of the container with this hash, or undefined when there is none (or it is torn). */
  async read(podDir: string, containerName: string, hash: string): Promise<string | undefined> {
    const known = this.known(podDir, containerName, hash);
    if (known !== undefined) return known;
    const path = specCopyPath(podDir, containerName, hash);
    if (!path) return undefined;
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text === undefined || fnv32a(text) !== hash) return undefined;
    this.remember(podDir, containerName, hash, text);
    return text;
  }

  /** The pod directory is gone: nothing more to remember of it. */
  forgetPodDir(podDir: string): void {
    this.size -= this.byPodDir.get(podDir)?.size ?? 0;
    this.byPodDir.delete(podDir);
  }

  private known(podDir: string, containerName: string, hash: string): string | undefined {
    return this.byPodDir.get(podDir)?.get(`${containerName}/${hash}`);
  }

  private remember(podDir: string, containerName: string, hash: string, specJSON: string): void {
    if (this.size >= MAX_REMEMBERED) {
      this.byPodDir.clear();
      this.size = 0;
    }
    let pod = this.byPodDir.get(podDir);
    if (!pod) this.byPodDir.set(podDir, (pod = new Map()));
    const key = `${containerName}/${hash}`;
    if (!pod.has(key)) this.size++;
    pod.set(key, specJSON);
  }
}

/**
 * The spec copy of one container as the CRI lists it (inspect): on the container itself (an older
 * podctl, a debug container, no --root-dir), else in the pod directory its sandbox recorded. `path`
 * says where it was looked for, when in a pod directory.
 */
export async function recordedContainerSpec(
  runtime: Pick<RuntimeService, 'podSandboxStatus'>,
  container: T.Container,
  annotations: Record<string, string> = container.annotations,
): Promise<{ specJSON?: string; path?: string }> {
  const own = annotations[L.CONTAINER_SPEC_ANNOTATION];
  if (own !== undefined) return { specJSON: own };
  const hash = annotations[L.CONTAINER_HASH_ANNOTATION] ?? '';
  const name = container.labels[L.CONTAINER_NAME_LABEL] ?? container.metadata?.name ?? '';
  const sandbox = await ignoreNotFound(runtime.podSandboxStatus(container.podSandboxId));
  const podDir = sandbox?.status?.annotations?.[L.POD_DIR_ANNOTATION];
  if (!podDir) return {};
  return { specJSON: await new ContainerSpecCopies().read(podDir, name, hash), path: specCopyPath(podDir, name, hash) };
}
