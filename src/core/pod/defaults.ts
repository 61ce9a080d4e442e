import type { IContainer, IProbe, IVolume } from 'kubernetes-models/v1';
import type { Pod } from './types.js';
import { internDeep } from '../util/intern.js';

/** Always for :latest or no tag, IfNotPresent otherwise (SetDefaults_Container). */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastPart.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastPart.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultProbe(probe: IProbe | undefined): IProbe | undefined {
  if (!probe) return probe;
  const p: IProbe = { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3, ...probe };
  if (p.httpGet) p.httpGet = { path: '/', scheme: 'HTTP', ...p.httpGet };
  if (p.grpc) p.grpc = { service: '', ...p.grpc };
  return p;
}

function defaultContainer(c: IContainer): IContainer {
  const out: IContainer = {
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    ...c,
    imagePullPolicy: c.imagePullPolicy ?? defaultPullPolicy(c.image ?? ''),
  };
  if (c.ports) out.ports = c.ports.map((p) => ({ protocol: 'TCP', ...p }));
  if (c.env) {
    out.env = c.env.map((e) =>
      e.valueFrom?.fieldRef ? { ...e, valueFrom: { ...e.valueFrom, fieldRef: { apiVersion: 'v1', ...e.valueFrom.fieldRef } } } : e,
    );
  }
  // Limits without requests: requests default to the limits.
  const limits = c.resources?.limits;
  if (limits) out.resources = { ...c.resources, requests: { ...limits, ...(c.resources?.requests ?? {}) } };
  // Set only when present: deleting a property puts the object in V8's dictionary mode, about five
  // times the memory of a kept container spec (4.5 MB for 10,000 of them).
  for (const k of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const probe = defaultProbe(c[k]);
    if (probe !== undefined) out[k] = probe;
    else if (k in out) delete out[k];
  }
  return out;
}

function defaultVolume(v: IVolume): IVolume {
  const out: IVolume = { ...v };
  if (v.configMap) out.configMap = { defaultMode: 0o644, ...v.configMap };
  if (v.secret) out.secret = { defaultMode: 0o644, ...v.secret };
  if (v.downwardAPI) out.downwardAPI = { defaultMode: 0o644, ...v.downwardAPI };
  if (v.projected) out.projected = { defaultMode: 0o644, ...v.projected };
  if (v.hostPath) out.hostPath = { type: '', ...v.hostPath };
  return out;
}

/** The API server's defaults that matter on a node (pkg/apis/core/v1/defaults.go); the input is not changed. */
export function applyPodDefaults(input: Pod): Pod {
  const pod = structuredClone(input);
  pod.metadata = { ...pod.metadata, namespace: pod.metadata?.namespace || 'default' };
  const spec = pod.spec!;
  pod.spec = {
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    schedulerName: 'default-scheduler',
    securityContext: {},
    enableServiceLinks: true,
    ...spec,
    containers: (spec.containers ?? []).map(defaultContainer),
  };
  if (spec.initContainers) pod.spec.initContainers = spec.initContainers.map(defaultContainer);
  if (spec.volumes) pod.spec.volumes = spec.volumes.map(defaultVolume);
  // The node keeps every pod it runs: pods from one manifest share one copy of each string.
  return internDeep(pod);
}
