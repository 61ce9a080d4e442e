import type { IPod } from 'kubernetes-models/v1';
import type { RuntimePodStatus } from '../container/types.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { runtimeClassNotFound } from '../pod/references.js';
import { podMeta } from '../util/pod-key.js';
import { podSandboxConfig } from './config.js';
import type { RuntimeContext, RuntimeManagerOptions } from './context.js';
import type { PodFiles } from './pod-files.js';

/** The kubelet's kuberuntime_sandbox.go: a pod's sandbox config, its creation, its IPs, its stop and removal. */
export class Sandboxes {
  constructor(
    private readonly ctx: Pick<RuntimeContext, 'runtime' | 'logRoot' | 'agent' | 'hostIP'>,
    private readonly files: PodFiles,
    private readonly runtimeClasses: RuntimeManagerOptions['runtimeClasses'],
    private readonly defaultRuntimeHandler: string,
  ) {}

  /** The kubelet's generatePodSandboxConfig. */
  async config(pod: IPod, attempt: number): Promise<T.PodSandboxConfigInput> {
    const resolvConf = (await this.files.readHostFiles()).resolvConf;
    const podDir = this.files.rootDir ? this.files.podDir(podMeta(pod).uid) : undefined;
    return podSandboxConfig(pod, attempt, this.ctx.logRoot, this.ctx.agent, resolvConf, podDir);
  }

  /**
   * The kubelet's createPodSandbox: the pod's log directory and spec copy, then RunPodSandbox.
   * whileCreating is called once the pod may run, before the sandbox is asked for.
   */
  async create(pod: IPod, config: T.PodSandboxConfigInput, whileCreating: () => void): Promise<string> {
    const handler = this.runtimeHandler(pod);
    await this.files.makePodLogDirectory(pod);
    whileCreating();
    await this.files.recordPodSpec(pod);
    return this.ctx.runtime.runPodSandbox(config, handler);
  }

  /** The pod's IPs: from the runtime view when the sandbox is the one it shows, else asked of the runtime once. */
  async podIPs(pod: IPod, sandboxId: string, status: RuntimePodStatus): Promise<string[]> {
    if (pod.spec?.hostNetwork) return this.ctx.hostIP ? [this.ctx.hostIP] : [];
    const known = status.sandboxes.find((s) => s.id === sandboxId && s.ip);
    if (known) return [known.ip!, ...known.additionalIps];
    const res = await ignoreNotFound(this.ctx.runtime.podSandboxStatus(sandboxId));
    const net = res?.status?.network;
    return net?.ip ? [net.ip, ...(net.additionalIps ?? []).map((i) => i.ip).filter(Boolean)] : [];
  }

  /** StopPodSandbox for each sandbox still ready (the end of the kubelet's KillPod). */
  async stopReady(status: RuntimePodStatus): Promise<void> {
    for (const sandbox of status.sandboxes) {
      if (sandbox.state !== 'ready') continue;
      await ignoreNotFound(this.ctx.runtime.stopPodSandbox(sandbox.id));
    }
  }

  /** Stops and removes every sandbox of a pod that was killed. */
  async removeAll(status: RuntimePodStatus): Promise<void> {
    for (const s of status.sandboxes) {
      await ignoreNotFound(this.ctx.runtime.stopPodSandbox(s.id));
      await ignoreNotFound(this.ctx.runtime.removePodSandbox(s.id));
    }
  }

  /** The pod's RuntimeClass handler, as the kubelet's runtimeClassManager resolves it; throws when it does not exist. */
  private runtimeHandler(pod: IPod): string {
    const name = pod.spec?.runtimeClassName;
    if (!name) return this.defaultRuntimeHandler;
    const found = this.runtimeClasses?.runtimeClass(name);
    if (!found) throw new Error(runtimeClassNotFound(name));
    return found.handler;
  }
}
