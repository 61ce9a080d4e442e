import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import type { RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { intern } from '../util/intern.js';
import { checkComponent } from '../util/safe-path.js';
import { fnv32a } from './hash.js';
import * as L from './labels.js';

/**
 * The spec copies podctl keeps of what it runs: the compact spec of each container (what its hash is
 * made from, for diffs, resize, inspect and the pod views) and the pod spec of each sandbox (for the
 * debugging commands, without the agent that made it). With a pod directory they are files in it,
 * <pod dir>/containers/<name>/<hash>.spec.json and <pod dir>/<hash>.pod-spec.json, rather than
 * annotations: every relist lists every annotation, and at 5,000 pods the copies were a third of its
 * bytes. Each file is named by a hash the record does carry (the container's hash annotation, the
 * sandbox's POD_SPEC_HASH_ANNOTATION: fnv32a of the very same text), so any process that can read the
 * records and the pod directory the sandbox recorded finds it, whichever --root-dir made it; a file
 * whose text does not hash to its name (a torn write) is no copy. Without a pod directory (no
 * --root-dir), for debug containers, and on what an older podctl made, the copies are annotations.
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

/** Where a sandbox's pod spec copy lives, or undefined when the pod directory or hash cannot name one. */
export function podSpecCopyPath(podDir: string, hash: string): string | undefined {
  return isAbsolute(podDir) && HASH.test(hash) ? join(podDir, `${hash}.pod-spec.json`) : undefined;
}

/** Bound on remembered copies: past it the memory starts again (each is re-read once). */
const MAX_REMEMBERED = 100_000;

/**
 * Writes and reads spec copies, remembering each by pod directory: a copy never changes for its
 * name (the hash is of its text), so a process reads each one once, and the one that wrote it never.
 */
export class SpecCopies {
  private readonly byPodDir = new Map<string, Map<string, string>>();
  private size = 0;

  /** Records a container's copy before it is created; returns its hash (the container's hash annotation). */
  async write(podDir: string, containerName: string, specJSON: string): Promise<string> {
    const hash = fnv32a(specJSON);
    const path = specCopyPath(podDir, containerName, hash);
    if (!path) throw new Error(`cannot record the spec of container ${JSON.stringify(containerName)} under ${podDir}`);
    return this.writeFile(podDir, path, hash, specJSON);
  }

  /** The copy of the container with this hash, or undefined when there is none (or it is torn). */
  read(podDir: string, containerName: string, hash: string): Promise<string | undefined> {
    return this.readFile(podDir, specCopyPath(podDir, containerName, hash), hash);
  }

  /** Records a pod's spec copy before its sandbox is created; returns its hash (the sandbox's POD_SPEC_HASH_ANNOTATION). */
  async writePodSpec(podDir: string, specJSON: string): Promise<string> {
    const hash = fnv32a(specJSON);
    const path = podSpecCopyPath(podDir, hash);
    if (!path) throw new Error(`cannot record the pod spec under ${podDir}`);
    // Not remembered: the process that makes sandboxes never reads pod specs back (only the views do).
    return this.writeFile(podDir, path, hash, specJSON, false);
  }

  /** The pod spec copy with this hash, or undefined when there is none (or it is torn). */
  readPodSpec(podDir: string, hash: string): Promise<string | undefined> {
    return this.readFile(podDir, podSpecCopyPath(podDir, hash), hash);
  }

  /** The pod directory is gone: nothing more to remember of it. */
  forgetPodDir(podDir: string): void {
    this.size -= this.byPodDir.get(podDir)?.size ?? 0;
    this.byPodDir.delete(podDir);
  }

  private async writeFile(podDir: string, path: string, hash: string, text: string, remember = true): Promise<string> {
    if (this.byPodDir.get(podDir)?.get(path) === undefined) {
      await mkdir(dirname(path), { recursive: true, mode: 0o750 });
      await writeFile(path, text, { mode: 0o640 });
      if (remember) this.remember(podDir, path, text);
    }
    return hash;
  }

  private async readFile(podDir: string, path: string | undefined, hash: string): Promise<string | undefined> {
    if (!path) return undefined;
    const known = this.byPodDir.get(podDir)?.get(path);
    if (known !== undefined) return known;
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text === undefined || fnv32a(text) !== hash) return undefined;
    this.remember(podDir, path, text);
    return text;
  }

  private remember(podDir: string, path: string, text: string): void {
    if (this.size >= MAX_REMEMBERED) {
      this.byPodDir.clear();
      this.size = 0;
    }
    let pod = this.byPodDir.get(podDir);
    if (!pod) this.byPodDir.set(podDir, (pod = new Map()));
    if (!pod.has(path)) this.size++;
    // Pods made from one manifest share their containers' specs: one copy of the text for all.
    pod.set(path, intern(text));
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
  return { specJSON: await new SpecCopies().read(podDir, name, hash), path: specCopyPath(podDir, name, hash) };
}

/**
 * The sandbox with its pod spec copy among its annotations, as it was before the copy moved to the
 * pod directory: read from there when the sandbox carries only its hash. Unchanged otherwise (an
 * older podctl's sandbox, no pod directory, or no readable copy).
 */
export async function withPodSpecCopy<S extends { annotations: Record<string, string> }>(
  sandbox: S,
  copies: SpecCopies = new SpecCopies(),
): Promise<S> {
  const a = sandbox.annotations;
  const hash = a[L.POD_SPEC_HASH_ANNOTATION];
  const podDir = a[L.POD_DIR_ANNOTATION];
  if (a[L.POD_SPEC_ANNOTATION] !== undefined || !hash || !podDir) return sandbox;
  const spec = await copies.readPodSpec(podDir, hash);
  return spec === undefined ? sandbox : { ...sandbox, annotations: { ...a, [L.POD_SPEC_ANNOTATION]: spec } };
}
