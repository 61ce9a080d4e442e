import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

export class Condition extends PodctlCommand {
  static override summary =
    "Set a pod condition on the agent, as a controller sets a readiness gate's: Ready waits until every gate's condition is True.";
  static override description = prose`The pod's spec.readinessGates name condition types; until each is present and True the pod's Ready
condition is False (reason ReadinessGatesNotReady), however ready its containers are. This sets one on the agent
that keeps the pod (run --detach, agent, watch, a foreground run: --root-dir), as kubectl patches a pod's status
through the API server; the kubelet's own types (Ready, ContainersReady, Initialized, PodScheduled,
PodReadyToStartContainers) are refused. The condition lasts as long as the pod on that agent.`;
  static override examples = [
    '<%= config.bin %> condition web example.com/feature-1=True',
    '<%= config.bin %> condition web example.com/feature-1=False --reason Rollout --message "waiting for the canary"',
    '<%= config.bin %> condition pod/web example.com/lb-ready=True -n lab -o json',
  ];
  static override args = {
    pod: Args.string({ description: 'The pod (NAME or pod/NAME).', required: true, ignoreStdin: true }),
    condition: Args.string({ description: 'TYPE=True, TYPE=False or TYPE=Unknown.', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    reason: Flags.string({ summary: "The condition's reason (one CamelCase word)." }),
    message: Flags.string({ summary: "The condition's message." }),
    output: Flags.string({
      char: 'o',
      summary: 'Output format: a line, or the pod as the agent now has it.',
      options: ['text', 'json'],
      default: 'text',
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Condition);
    const at = args.condition.lastIndexOf('=');
    const type = at > 0 ? args.condition.slice(0, at) : '';
    const status = at > 0 ? args.condition.slice(at + 1) : '';
    if (!type || (status !== 'True' && status !== 'False' && status !== 'Unknown')) {
      throw new PodctlError(`condition ${JSON.stringify(args.condition)}: expected TYPE=True, TYPE=False or TYPE=Unknown`, { exitCode: 2 });
    }
    const name = podArg(args.pod);
    const { AgentClient } = await import('../core/node/client.js');
    const agent = new AgentClient(flags['root-dir']);
    if (!(await agent.running())) {
      throw new PodctlError(`no agent answers on ${agent.socket}: pod conditions are kept by the agent that runs the pod`, {
        hint: 'pass the --root-dir of its `run --detach`, `agent` or `watch`',
      });
    }
    const pod = await agent.setCondition(flags.namespace, name, { type, status, reason: flags.reason, message: flags.message });
    if (flags.output === 'json') {
      this.log(JSON.stringify(pod, null, 2));
      return;
    }
    const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
    const why = ready?.status === 'True' ? '' : ` (${ready?.reason ?? 'not synced yet'}${ready?.message ? `: ${ready.message}` : ''})`;
    this.log(`pod/${name} condition ${type}=${status}; Ready=${ready?.status ?? 'Unknown'}${why}`);
  }
}
