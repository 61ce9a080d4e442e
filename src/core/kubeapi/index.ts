import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeInfo } from '../admission.js';
import type { CriClient } from '../cri/client.js';
import { PodctlError } from '../errors.js';
import type { NodeAgent } from '../node/agent.js';
import { authenticate, tlsServerOptions } from './auth.js';
import { ensureKubeCredentials } from './certs.js';
import { KubeFeed } from './feed.js';
import { metricsGroup } from './metrics-group.js';
import { reviewGroups } from './review-groups.js';
import { CRD_KINDS, crdGroup } from './crd-group.js';
import { ObjectFiles, startVersionFor } from './object-files.js';
import { KubeRoutes } from './routes.js';
import { PortTakenError, startKubeApiServer, type KubeApiServer } from './server.js';
import { WatchCache } from './store.js';

export { PortTakenError };

export interface KubeApiOptions {
  agent: NodeAgent;
  rootDir: string;
  nodeName: string;
  host: string;
  /** Undefined: 6443, or any free port when another process has it (said in the log); 0: any free port. */
  port?: number;
  admission: { allowPrivileged: boolean; node: NodeInfo };
  cri: CriClient;
  podctlVersion: string;
  now: () => number;
  /** The Node as the kubelet would post it now. */
  node: () => Record<string, unknown>;
  log: (message: string) => void;
}

export const DEFAULT_KUBE_API_PORT = 6443;

/** Where the kube API's credentials, objects and endpoint live under the root dir. */
export const kubeApiDir = (rootDir: string): string => join(rootDir, 'kubeapi');

export interface RunningKubeApi {
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves the Kubernetes API for this node over the agent: credentials made at first start, the
 * ConfigMaps and Secrets it keeps read back, the store fed from the agent, the TLS server up, and
 * where it listens recorded for `podctl kubeconfig`.
 */
export async function startKubeApi(o: KubeApiOptions): Promise<RunningKubeApi> {
  const dir = kubeApiDir(o.rootDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const creds = ensureKubeCredentials(dir, { hosts: o.host === '127.0.0.1' || o.host === 'localhost' ? [] : [o.host] });
  const files = new ObjectFiles(join(dir, 'objects'), o.log);
  // Versions keep increasing across restarts: a client's version from before one is answered 410, and it relists.
  const cache = new WatchCache({
    startVersion: startVersionFor(files.readVersion(), o.now()),
    reserveVersions: (v) => files.saveVersion(v),
    kinds: CRD_KINDS,
  });
  const declared = new Set<string>();
  for (const { resource, obj } of files.load()) {
    cache.put(resource, obj);
    if (resource === 'namespaces') declared.add(obj.metadata!.name!);
  }
  const feed = new KubeFeed({ agent: o.agent, cache, files, now: o.now, node: o.node, declared });
  feed.start();
  let server: KubeApiServer | undefined;
  const routes = new KubeRoutes({
    agent: o.agent,
    cache,
    pods: { agent: o.agent, cache, files, nodeName: o.nodeName, admission: o.admission, now: o.now },
    objects: {
      cache,
      files,
      now: o.now,
      declared,
      changed: () => {
        feed.syncNamespaces();
        feed.publishObjects();
      },
    },
    reads: { cache, now: o.now, log: o.log },
    streams: { cri: o.cri, log: o.log },
    groups: [metricsGroup({ cri: o.cri, cache }), ...reviewGroups(), crdGroup({ cache })],
    podctlVersion: o.podctlVersion,
    startedAt: o.now(),
    serverAddress: () => (server ? new URL(server.url).host : `${o.host}:${o.port ?? DEFAULT_KUBE_API_PORT}`),
    changed: () => feed.syncNamespaces(),
  });
  const listen = (port: number) =>
    startKubeApiServer({
      host: o.host,
      port,
      tls: tlsServerOptions(creds),
      authenticate: (req) => authenticate(req, creds),
      handler: routes,
      log: o.log,
    });
  try {
    server = await listen(o.port ?? DEFAULT_KUBE_API_PORT);
  } catch (err) {
    if (!(err instanceof PortTakenError) || o.port !== undefined) {
      feed.stop();
      // A port the user chose is not moved behind their back: they choose again, or go without.
      if (err instanceof PortTakenError)
        throw new PodctlError(err.message, {
          hint: 'pass another --kube-api-port (0 picks a free one), or --no-kube-api to serve none',
          cause: err,
        });
      throw err;
    }
    server = await listen(0);
    o.log(`${err.message}; serving it on ${server.url} instead (podctl kubeconfig points there)`);
  }
  const endpoint = join(dir, 'endpoint.json');
  writeFileSync(`${endpoint}.tmp`, `${JSON.stringify({ url: server.url, pid: process.pid })}\n`, { mode: 0o600 });
  renameSync(`${endpoint}.tmp`, endpoint);
  const running = server;
  return {
    url: running.url,
    stop: async () => {
      feed.stop();
      await running.close();
    },
  };
}
