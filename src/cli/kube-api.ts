import type { CriClient } from '../core/cri/client.js';
import { startKubeApi, type RunningKubeApi } from '../core/kubeapi/index.js';
import { nodeSource } from '../core/kubeapi/node-source.js';
import type { StandaloneNode } from '../core/node/node.js';
import { nodeInfoFromFlags } from './node-info.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** The agent's Kubernetes API, from its flags: on loopback unless --kube-api-address says otherwise (with a warning). */
export async function startNodeKubeApi(
  flags: {
    'root-dir': string;
    'node-name': string;
    'node-labels'?: string;
    'system-reserved'?: string;
    'kube-reserved'?: string;
    'max-pods': number;
    'allow-privileged': boolean;
    'kube-api-port'?: number;
    'kube-api-address': string;
  },
  node: StandaloneNode,
  client: CriClient,
  version: { runtimeName: string; runtimeVersion: string },
  podctlVersion: string,
  say: (line: string) => void,
): Promise<RunningKubeApi> {
  const host = flags['kube-api-address'];
  if (!LOOPBACK.has(host))
    say(
      `Warning: --kube-api-address ${host}: the Kubernetes API is reachable from the network; ` +
        'only clients with this node credentials are served, but anyone who can reach it can try',
    );
  const info = nodeInfoFromFlags(flags);
  return startKubeApi({
    agent: node.agent,
    rootDir: flags['root-dir'],
    nodeName: flags['node-name'],
    host,
    port: flags['kube-api-port'],
    admission: { allowPrivileged: flags['allow-privileged'], node: info },
    cri: client,
    podctlVersion,
    now: () => Date.now(),
    node: nodeSource({
      info,
      rootDir: flags['root-dir'],
      maxPods: flags['max-pods'],
      runtime: version,
      podctlVersion,
      health: () => node.agent.health(),
    }),
    log: say,
  });
}
