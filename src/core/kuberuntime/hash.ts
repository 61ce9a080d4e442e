import type { IContainer } from 'kubernetes-models/v1';
import { canonicalJSON } from '../util/canonical-json.js';

/** FNV-1a, 32 bits, as the kubelet hashes container specs; hex like its annotation. */
export function fnv32a(text: string): string {
  let hash = 0x811c9dc5;
  const bytes = Buffer.from(text, 'utf8');
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/**
 * Each spec object's hash, computed once: computePodActions hashes every running container at every
 * sync (the 60 s resync of 5,000 pods serialised 10,000 specs a minute). A pod handed to the kubelet
 * is never changed in place (an update brings a new object), so an object's hash does not change.
 */
const hashes = new WeakMap<object, string>();

/** The container's spec hash: what decides that a running container must be replaced. */
export function hashContainer(container: object): string {
  let hash = hashes.get(container);
  if (hash === undefined) {
    hash = fnv32a(canonicalJSON(container));
    hashes.set(container, hash);
  }
  return hash;
}

/** The spec fields that decide the container's hash, kept compact for diffs. */
export function containerSpecForHash(container: IContainer): IContainer {
  return container;
}

/** The compact spec copy (annotation or pod-directory file): the very text the hash is made from. */
export function containerSpecJSON(container: IContainer): string {
  return canonicalJSON(containerSpecForHash(container));
}

/** The pod spec copy of a sandbox (annotation or pod-directory file). */
export function podSpecJSON(pod: { spec?: object }): string {
  return canonicalJSON(pod.spec!);
}
