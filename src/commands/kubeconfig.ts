import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { podViewFlags } from '../cli/pod-flags.js';

export class Kubeconfig extends PodctlCommand {
  static override summary = "Print a kubeconfig for this node's Kubernetes API (served by its agent), or merge it into yours.";
  static override description =
    'The cluster, user (the client certificate of podctl-admin, in system:masters) and context are all named podctl. ' +
    'With --merge, the podctl entries are added to the kubeconfig file, or replace the ones of the same name; ' +
    'every other entry stays as it was, and current-context is set only where none was. The agent makes the ' +
    'credentials at its first start and records where the API listens: this command makes none.';
  static override examples = [
    '<%= config.bin %> kubeconfig > podctl.kubeconfig && kubectl --kubeconfig podctl.kubeconfig get pods',
    '<%= config.bin %> kubeconfig --merge && kubectl --context podctl get pods',
    '<%= config.bin %> kubeconfig --merge --kubeconfig /tmp/kube/config --root-dir /tmp/lab',
  ];
  static override flags = {
    ...podViewFlags,
    merge: Flags.boolean({ summary: 'Add the podctl cluster, user and context to the kubeconfig file instead of printing them.' }),
    kubeconfig: Flags.string({
      summary: "The kubeconfig file --merge writes (default: $KUBECONFIG's first entry, else ~/.kube/config).",
      dependsOn: ['merge'],
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Kubeconfig);
    const kc = await import('../cli/kubeconfig.js');
    if (!flags.merge) {
      process.stdout.write(kc.kubeconfigYaml(kc.nodeKubeconfig(flags['root-dir'])));
      return;
    }
    const done = kc.mergeIntoKubeconfig(flags['root-dir'], flags.kubeconfig ?? kc.defaultKubeconfigPath());
    const where = kc.displayPath(done.path);
    this.log(
      done.action === 'added' ? `Context "${kc.CONTEXT_NAME}" added to ${where}` : `Context "${kc.CONTEXT_NAME}" updated in ${where}`,
    );
  }
}
