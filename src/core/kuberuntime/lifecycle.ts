import type { IContainer, ILifecycleHandler, IPod } from 'kubernetes-models/v1';
import { ignoreNotFound } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import { runHandler, type Handler } from '../prober/handlers.js';
import { podMeta } from '../util/pod-key.js';
import type { RuntimeContext } from './context.js';

/**
 * The kubelet's lifecycle handlerRunner: runs a postStart or preStop hook (exec, httpGet or sleep)
 * and says its failure in the kubelet's words.
 */
export class HandlerRunner {
  constructor(private readonly ctx: Pick<RuntimeContext, 'runtime' | 'clock' | 'hostIP'>) {}

  /** The failure message, or undefined when the hook succeeded. */
  async run(
    hook: ILifecycleHandler,
    pod: IPod,
    container: IContainer,
    containerId: string,
    sandboxId: string | undefined,
    timeoutSeconds: number,
  ): Promise<string | undefined> {
    const what = hook.exec
      ? `Exec lifecycle hook (${JSON.stringify(hook.exec.command ?? [])})`
      : hook.httpGet
        ? `HTTP lifecycle hook (${hook.httpGet.path ?? '/'})`
        : 'Sleep lifecycle hook';
    const m = podMeta(pod);
    try {
      const podIP = hook.httpGet && !hook.httpGet.host ? await this.podIP(pod, sandboxId) : undefined;
      const outcome = await runHandler(hook as Handler, {
        runtime: this.ctx.runtime,
        clock: this.ctx.clock,
        containerId,
        container,
        podIP,
        timeoutSeconds,
      });
      if (outcome.result !== 'failure') return undefined;
      return (
        `${what} for Container "${container.name}" in Pod ` +
        `"${m.name}_${m.namespace}(${m.uid})" failed - error: ${outcome.output.trim()}`
      );
    } catch (err) {
      return `${what} for Container "${container.name}" in Pod "${m.name}_${m.namespace}(${m.uid})" failed - error: ${errorMessage(err)}`;
    }
  }

  /** The pod IP a hook's httpGet reaches: the sandbox's, or the host's for host-network pods. */
  private async podIP(pod: IPod, sandboxId: string | undefined): Promise<string | undefined> {
    if (pod.spec?.hostNetwork) return this.ctx.hostIP ?? '127.0.0.1';
    if (!sandboxId) return undefined;
    const res = await ignoreNotFound(this.ctx.runtime.podSandboxStatus(sandboxId));
    return res?.status?.network?.ip || undefined;
  }
}

/** The preStop handler recorded on a container, for a container whose spec is not known. */
export function parsePreStop(json: string | undefined): ILifecycleHandler | undefined {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as ILifecycleHandler;
  } catch {
    return undefined;
  }
}
