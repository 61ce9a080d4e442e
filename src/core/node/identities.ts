import type { IPod } from 'kubernetes-models/v1';
import type { RuntimeService } from '../cri/client.js';
import { podsHeldByRuntime, settleIdentities, type HeldPod, type SettledPods } from '../pod-identity.js';
import { hasDerivedUID } from '../pod/index.js';
import { podKey } from '../util/pod-key.js';
import { nodeAgentLabel } from './paths.js';

/**
 * The podctl sandboxes the runtime held when last read (what a pod handed over must not collide
 * with), and the pods an older podctl started under a path-hashed UID: namespace/name to the UID of
 * the sandbox running it, which such a pod keeps (its sandbox adopted, not killed and started again).
 */
export class PodIdentities {
  private held: HeldPod[] = [];
  private readonly adopted = new Map<string, string>();

  constructor(
    private readonly runtime: Pick<RuntimeService, 'listPodSandbox'>,
    private readonly rootDir: string,
    private readonly nodeName: string,
  ) {}

  /** Reads what the runtime holds; this node's own sandboxes under a UID their namespace/name does not derive are adopted. */
  async readHeld(): Promise<void> {
    this.held = await podsHeldByRuntime(this.runtime).catch(() => this.held);
    const agent = nodeAgentLabel(this.rootDir);
    for (const h of this.held) {
      const key = podKey(h);
      if (h.ready && h.agent === agent && !this.adopted.has(key) && !hasDerivedUID({ metadata: h }, this.nodeName))
        this.adopted.set(key, h.uid);
    }
  }

  /** The UID a pod whose UID is derived runs under: its adopted sandbox's, if any. */
  adoptedUID(pod: IPod): string | undefined {
    return hasDerivedUID(pod, this.nodeName) ? this.adopted.get(podKey(pod)) : undefined;
  }

  isAdopted(key: string): boolean {
    return this.adopted.has(key);
  }

  adopt(key: string, uid: string): void {
    this.adopted.set(key, uid);
  }

  forget(key: string): void {
    this.adopted.delete(key);
  }

  /** The pods settled against what else runs: the sandboxes held, but those of the UIDs this node keeps. */
  settle(pods: IPod[], kept: Set<string>): SettledPods {
    return settleIdentities(
      pods,
      this.held.filter((h) => !kept.has(h.uid)),
      this.nodeName,
    );
  }
}
