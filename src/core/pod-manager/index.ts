import type { IPod } from 'kubernetes-models/v1';
import { hasDerivedUID } from '../pod/uid.js';
import { podKey, podMeta } from '../util/pod-key.js';

/** What the rest of the kubelet reads of the desired pods. */
export interface PodManagerView {
  /** The desired pods by UID. */
  readonly pods: ReadonlyMap<string, IPod>;
  getPodByUID(uid: string): IPod | undefined;
  /** The pod of that namespace/name (one per namespace/name on a node). */
  getPodByFullName(namespace: string, name: string): IPod | undefined;
  /** The config sources that delivered the pod ('file', 'http', 'api', …). */
  sourcesOf(uid: string): ReadonlySet<string>;
  /** Whether the pod is a static pod: its UID is the one its namespace/name derives on this node. */
  isStaticPod(pod: IPod): boolean;
}

/**
 * The kubelet's pod manager (pkg/kubelet/pod): the desired pods by UID and by namespace/name, and the
 * sources each came from. A node holds one pod per namespace/name: a pod of a new UID under a name
 * takes the name over (the old UID stays until its removal, as its worker still has to kill it).
 */
export class PodManager implements PodManagerView {
  private readonly byUID = new Map<string, IPod>();
  private readonly byFullName = new Map<string, string>();
  private readonly sources = new Map<string, Set<string>>();

  constructor(private readonly nodeName: string) {}

  get pods(): ReadonlyMap<string, IPod> {
    return this.byUID;
  }

  /** Adds or replaces the pod of its UID, from that source (none: the source is not known). */
  addOrUpdatePod(pod: IPod, source?: string): void {
    const uid = podMeta(pod).uid;
    this.byUID.set(uid, pod);
    this.byFullName.set(podKey(pod), uid);
    if (source !== undefined) {
      let s = this.sources.get(uid);
      if (!s) this.sources.set(uid, (s = new Set()));
      s.add(source);
    }
  }

  /** Keeps the newer object of a pod already held (RECONCILE: only its metadata or status moved). */
  reconcilePod(pod: IPod): void {
    if (this.byUID.has(podMeta(pod).uid)) this.addOrUpdatePod(pod);
  }

  removePod(uid: string): void {
    const pod = this.byUID.get(uid);
    this.byUID.delete(uid);
    this.sources.delete(uid);
    if (!pod || this.byFullName.get(podKey(pod)) !== uid) return;
    // Another UID of that namespace/name still held (one being replaced, still terminating) keeps the name.
    const other = [...this.byUID.values()].find((p) => podKey(p) === podKey(pod));
    if (other) this.byFullName.set(podKey(pod), podMeta(other).uid);
    else this.byFullName.delete(podKey(pod));
  }

  getPodByUID(uid: string): IPod | undefined {
    return this.byUID.get(uid);
  }

  getPodByFullName(namespace: string, name: string): IPod | undefined {
    const uid = this.byFullName.get(`${namespace}/${name}`);
    return uid === undefined ? undefined : this.byUID.get(uid);
  }

  sourcesOf(uid: string): ReadonlySet<string> {
    return this.sources.get(uid) ?? new Set();
  }

  isStaticPod(pod: IPod): boolean {
    return hasDerivedUID(pod, this.nodeName);
  }
}
