import { Args, Flags } from '@oclif/core';
import type { IContainer } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import type * as T from '../core/cri/types.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

/** The container spec podctl records on each container (env with its valueFrom references). */
function parseContainerSpec(json: string | undefined): IContainer | undefined {
  try {
    return json ? (JSON.parse(json) as IContainer) : undefined;
  } catch {
    return undefined;
  }
}

export class Inspect extends PodctlCommand {
  static override summary = "The runtime's raw status of a pod sandbox or a container, as JSON (crictl inspectp / inspect).";
  static override description = prose`pod: a sandbox ID (or unique prefix), or the name of a podctl pod in -n NAMESPACE (its newest
sandbox). 
container: a container ID (or unique prefix); or a container's name, for the newest instance of it: POD/CONTAINER,
or --pod POD with the name, or the name alone when one pod in -n NAMESPACE has a container of that name (a
container name is unique only within its pod: when several pods have one, they are named).

Prints the verbose CRI status response, with the runtime's info documents expanded. Environment values that come
from a Secret (secretKeyRef, envFrom secretRef), and any environment value, argument or command word that holds
such a value (a $(VAR) expansion), are redacted unless --show-secrets is given.`;
  static override examples = [
    '<%= config.bin %> inspect pod web',
    '<%= config.bin %> inspect pod 3f2a9c1d',
    '<%= config.bin %> inspect container web/app',
    '<%= config.bin %> inspect container app --pod web -n shop',
    '<%= config.bin %> inspect container 9be1c0d4e5f6 | jq .status.state',
  ];
  static override args = {
    kind: Args.string({ description: 'pod or container.', required: true, options: ['pod', 'container'], ignoreStdin: true }),
    id: Args.string({
      description: 'ID, unique ID prefix, or name (a container: NAME, POD/NAME, or NAME with --pod).',
      required: true,
      ignoreStdin: true,
    }),
  };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    pod: Flags.string({ summary: 'With container: the pod whose container ID names (by its name).' }),
    'show-secrets': Flags.boolean({ summary: 'Print environment values that come from a Secret (redacted by default).' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Inspect);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [
      { connect },
      { recordedContainerSpec },
      L,
      { countRedacted, redactEnv, secretEnvPredicate },
      { expandInfo },
      { findContainer, findPodSandbox },
    ] = await Promise.all([
      import('../cli/runtime.js'),
      import('../core/kuberuntime/spec-copy.js'),
      import('../core/kuberuntime/labels.js'),
      import('../core/redact.js'),
      import('../cli/render.js'),
      import('../cli/inspect-target.js'),
    ]);
    const { client } = await connect(flags);
    try {
      let doc: { status?: unknown; info?: Record<string, string> };
      let container: T.Container | undefined;
      if (args.kind === 'pod') {
        if (flags.pod !== undefined) throw new PodctlError('--pod is for inspect container; a pod is named by ID itself', { exitCode: 2 });
        const id = await findPodSandbox(client, args.id, flags.namespace);
        doc = await client.podSandboxStatus(id, true);
      } else {
        container = await findContainer(client, args.id, { namespace: flags.namespace, pod: flags.pod });
        doc = await client.containerStatus(container.id, true);
      }
      let out: unknown = { ...doc, info: expandInfo(doc.info) };
      if (container && !flags['show-secrets']) {
        // The runtime repeats every env value (CRI config, OCI spec): those from a Secret are not printed.
        const annotations = (doc.status as { annotations?: Record<string, string> } | undefined)?.annotations ?? container.annotations;
        const recorded = await recordedContainerSpec(client, container, annotations);
        const spec = parseContainerSpec(recorded.specJSON);
        const path = recorded.path;
        // A podctl container whose spec copy cannot be read: which values came from a Secret is unknown, so none is printed.
        const unknown = !spec && container.labels[L.MANAGED_BY_LABEL] === L.MANAGED_BY_VALUE;
        out = redactEnv(out, unknown ? () => true : secretEnvPredicate(spec));
        const n = countRedacted(out);
        if (unknown && n)
          process.stderr.write(
            `the container's spec copy${path ? ` (${path})` : ''} could not be read: ` +
              `all ${n} environment value(s) are redacted; --show-secrets prints them\n`,
          );
        else if (n)
          process.stderr.write(
            `${n} environment value(s) or argument(s) that come from a Secret are redacted; --show-secrets prints them\n`,
          );
      }
      this.log(JSON.stringify(out, null, 2));
    } finally {
      client.close();
    }
  }
}
