import { FIELD_ROOTS, FIELD_TYPES } from '../../generated/pod/fields.js';

/**
 * What podctl does with every field of the v1 Pod: honoured (with the module
 * that implements it), warned about (the pod runs, differently from a
 * cluster) or refused (the pod would not run as meant). Keys are field paths
 * without list indices; init containers share the `spec.containers` entries.
 * A unit test walks the generated field tree and fails on any path without
 * an entry, so a field new in kubernetes-models is never silently dropped.
 */
export type FieldFate =
  | { fate: 'honoured'; by: string; except?: Record<string, FieldException> }
  | { fate: 'warned' | 'refused'; reason: string; by?: undefined; except?: undefined };

/** A value of an honoured field podctl cannot honour; validate's own rules find it. */
export interface FieldException {
  fate: 'warned' | 'refused';
  /** Which values, for the README ("when ClusterFirst is written"). */
  when: string;
  reason: string;
}

const honoured = (by: string, except?: Record<string, FieldException>): FieldFate => ({ fate: 'honoured', by, except });
const warned = (reason: string): FieldFate => ({ fate: 'warned', reason });
const refused = (reason: string): FieldFate => ({ fate: 'refused', reason });

const NO_API_SERVER = warned('ignored: set by the API server, which one host does not have');
/** One object for every driverless volume type: validate names the type before the reason. */
export const OTHER_VOLUME = refused(
  'not supported on a single host; supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected',
);

const table: Record<string, FieldFate> = {
  apiVersion: honoured('pod/load'),
  kind: honoured('pod/load'),
  metadata: honoured('pod/load'),
  'metadata.name': honoured('pod/load'),
  'metadata.namespace': honoured('pod/load'),
  'metadata.labels': honoured('kuberuntime/labels'),
  'metadata.annotations': honoured('kuberuntime/labels'),
  'metadata.uid': honoured('pod/uid'),
  'metadata.generateName': warned('ignored: a static pod needs metadata.name; no name is generated'),
  'metadata.creationTimestamp': NO_API_SERVER,
  'metadata.deletionTimestamp': NO_API_SERVER,
  'metadata.deletionGracePeriodSeconds': NO_API_SERVER,
  'metadata.finalizers': NO_API_SERVER,
  'metadata.generation': NO_API_SERVER,
  'metadata.managedFields': NO_API_SERVER,
  'metadata.ownerReferences': warned('ignored: there is no garbage collector'),
  'metadata.resourceVersion': NO_API_SERVER,
  'metadata.selfLink': NO_API_SERVER,
  status: warned('ignored: the status is computed by podctl, as by the kubelet'),
  spec: honoured('kubelet'),

  // Scheduling: one node, no scheduler.
  'spec.nodeSelector': honoured("admission (NodeAffinity against this node's labels, --node-labels)"),
  'spec.affinity': honoured('admission (required node affinity, as nodeSelector)', {
    notRequiredNode: {
      fate: 'warned',
      when: 'preferred node affinity terms, pod affinity or pod anti-affinity',
      reason: 'ignored: there is no scheduler and one node; only required node affinity is matched',
    },
  }),
  'spec.tolerations': warned('ignored: this node has no taints'),
  'spec.topologySpreadConstraints': warned('ignored: there is one node to spread over'),
  'spec.priorityClassName': warned('ignored: there is no preemption and no PriorityClass'),
  'spec.priority': warned('ignored: there is no preemption'),
  'spec.preemptionPolicy': warned('ignored: there is no preemption'),
  // default-scheduler is the API server's default, which the kube API shows and kubectl debug --copy-to sends back.
  'spec.schedulerName': honoured('pod/defaults (default-scheduler)', {
    otherScheduler: { fate: 'warned', when: 'other than default-scheduler', reason: 'ignored: there is no scheduler' },
  }),
  'spec.schedulingGates': warned('ignored: there is no scheduler to hold the pod back; it runs at once'),
  'spec.nodeName': honoured('pod/load', {
    otherNode: { fate: 'warned', when: 'another node than this host', reason: "this host's node name is used" },
  }),
  'spec.overhead': warned('ignored: pod overhead is not accounted for on this host'),
  'spec.runtimeClassName': honoured('kuberuntime/manager (the RuntimeClass of that name in the manifests gives the CRI runtime handler)'),
  'spec.os': honoured('pod/validate'),
  'spec.os.name': honoured('pod/validate', {
    notLinux: { fate: 'refused', when: 'other than linux', reason: 'this node runs linux' },
  }),

  // Lifecycle of the pod.
  'spec.restartPolicy': honoured('kuberuntime/actions'),
  'spec.terminationGracePeriodSeconds': honoured('kuberuntime/manager'),
  'spec.activeDeadlineSeconds': honoured('kubelet (active deadline handler)'),
  'spec.readinessGates': honoured('status/generate (Ready waits for each gate; `podctl condition` sets one on the agent)'),
  'spec.readinessGates.conditionType': honoured('status/generate'),
  'spec.imagePullSecrets': honoured('credentials/keyring'),
  'spec.imagePullSecrets.name': honoured('credentials/keyring'),
  'spec.resources': warned("ignored: podctl builds no pod-level cgroup; only the containers' resources apply"),
  'spec.resourceClaims': refused('dynamic resource allocation needs a cluster; not supported'),
  'spec.ephemeralContainers': refused('ephemeral containers are added through the API server, which this host does not have'),

  // Identity and service accounts.
  'spec.serviceAccountName': honoured('pod/validate', {
    noToken: {
      fate: 'warned',
      when: 'other than default, with a token automounted',
      reason: 'no service account token is mounted: there is no API server to issue one',
    },
  }),
  'spec.serviceAccount': honoured('pod/validate', {
    noToken: {
      fate: 'warned',
      when: 'other than default, with a token automounted',
      reason: 'no service account token is mounted: there is no API server to issue one',
    },
  }),
  'spec.automountServiceAccountToken': honoured('pod/validate'),
  'spec.enableServiceLinks': honoured('kuberuntime/env (there are no Services, so no service variables)'),

  // Namespaces, networking, DNS.
  'spec.hostNetwork': honoured('kuberuntime/config'),
  'spec.hostPID': honoured('kuberuntime/config'),
  'spec.hostIPC': honoured('kuberuntime/config'),
  'spec.shareProcessNamespace': honoured('kuberuntime/config'),
  'spec.hostUsers': honoured('kuberuntime/config', {
    userNamespace: { fate: 'refused', when: 'false', reason: 'user namespaces (hostUsers: false) are not supported by podctl' },
  }),
  'spec.hostname': honoured('kuberuntime/config'),
  'spec.subdomain': honoured('kuberuntime/config'),
  'spec.setHostnameAsFQDN': warned('ignored: the hostname stays the short pod hostname'),
  'spec.hostAliases': honoured('kuberuntime/config'),
  'spec.hostAliases.ip': honoured('kuberuntime/config'),
  'spec.hostAliases.hostnames': honoured('kuberuntime/config'),
  'spec.dnsPolicy': honoured('kuberuntime/config', {
    clusterFirst: {
      fate: 'warned',
      when: 'ClusterFirst (when written)',
      reason: 'there is no cluster DNS on one host: resolves as Default (the host resolv.conf)',
    },
  }),
  'spec.dnsConfig': honoured('kuberuntime/config'),
  'spec.dnsConfig.nameservers': honoured('kuberuntime/config'),
  'spec.dnsConfig.searches': honoured('kuberuntime/config'),
  'spec.dnsConfig.options': honoured('kuberuntime/config'),
  'spec.dnsConfig.options.name': honoured('kuberuntime/config'),
  'spec.dnsConfig.options.value': honoured('kuberuntime/config'),

  // Pod security context.
  'spec.securityContext': honoured('kuberuntime/config'),
  'spec.securityContext.runAsUser': honoured('kuberuntime/config'),
  'spec.securityContext.runAsGroup': honoured('kuberuntime/config'),
  'spec.securityContext.runAsNonRoot': honoured('kuberuntime/config'),
  'spec.securityContext.supplementalGroups': honoured('kuberuntime/config'),
  // Strict cannot be honoured: containerd 1.6's CRI has no field for it and the runtime merges the
  // image's /etc/group memberships. As the kubelet on such a runtime, admission refuses the pod.
  'spec.securityContext.supplementalGroupsPolicy': honoured("kuberuntime/config (Merge: the runtime adds the image's groups)", {
    strict: {
      fate: 'refused',
      when: 'Strict',
      reason:
        'refused at admission (SupplementalGroupsPolicyNotSupported: SupplementalGroupsPolicy=Strict is not supported in this node): ' +
        "containerd 1.6's CRI has no field for it, so the image's groups would be merged",
    },
  }),
  'spec.securityContext.fsGroup': honoured('volumes/ownership'),
  'spec.securityContext.fsGroupChangePolicy': warned('ignored: ownership is always changed (Always)'),
  'spec.securityContext.sysctls': honoured('kuberuntime/config'),
  'spec.securityContext.sysctls.name': honoured('kuberuntime/config'),
  'spec.securityContext.sysctls.value': honoured('kuberuntime/config'),
  'spec.securityContext.windowsOptions': warned('ignored: Windows only'),
  'spec.securityContext.seLinuxChangePolicy': warned(
    'ignored: podctl does not relabel volumes; SELinux options go to the runtime as they are',
  ),

  // Volumes.
  'spec.volumes': honoured('volumes/manager'),
  'spec.volumes.name': honoured('volumes/manager'),
  'spec.volumes.emptyDir': honoured('volumes/manager'),
  'spec.volumes.emptyDir.medium': honoured('volumes/manager'),
  'spec.volumes.emptyDir.sizeLimit': honoured(
    'volumes/manager (the tmpfs size for medium: Memory), eviction/local-storage (on disk: the pod is evicted once the emptyDir ' +
      'outgrows it)',
  ),
  'spec.volumes.hostPath': honoured('volumes/manager'),
  'spec.volumes.hostPath.path': honoured('volumes/manager'),
  'spec.volumes.hostPath.type': honoured('volumes/manager'),
  'spec.volumes.persistentVolumeClaim': refused(
    'not supported on a single host (no PersistentVolume controller); use hostPath or emptyDir',
  ),
  'spec.volumes.ephemeral': refused('not supported on a single host (no PersistentVolume provisioner); use emptyDir'),
  'spec.volumes.projected.sources.serviceAccountToken': refused('no API server issues service account tokens here'),
  'spec.volumes.projected.sources.clusterTrustBundle': refused('no API server serves ClusterTrustBundles here'),

  // Containers (and init containers).
  'spec.containers': honoured('kuberuntime/manager'),
  'spec.containers.name': honoured('kuberuntime/manager'),
  'spec.containers.image': honoured('kuberuntime/images'),
  'spec.containers.imagePullPolicy': honoured('kuberuntime/images'),
  'spec.containers.command': honoured('kuberuntime/config'),
  'spec.containers.args': honoured('kuberuntime/config'),
  'spec.containers.workingDir': honoured('kuberuntime/config'),
  'spec.containers.stdin': honoured('kuberuntime/config'),
  'spec.containers.stdinOnce': honoured('kuberuntime/config'),
  'spec.containers.tty': honoured('kuberuntime/config'),
  'spec.containers.terminationMessagePath': honoured('kuberuntime/manager'),
  'spec.containers.terminationMessagePolicy': honoured('kuberuntime/manager'),
  'spec.containers.restartPolicy': honoured('kuberuntime/actions (sidecars)'),
  'spec.containers.env': honoured('kuberuntime/env'),
  'spec.containers.envFrom': honoured('kuberuntime/env'),
  'spec.containers.ports': honoured('kuberuntime/config (CNI portmap)'),
  'spec.containers.resizePolicy': honoured('kuberuntime/resize'),
  'spec.containers.resizePolicy.resourceName': honoured('kuberuntime/resize'),
  'spec.containers.resizePolicy.restartPolicy': honoured('kuberuntime/resize'),
  'spec.containers.resources': honoured('kuberuntime/config'),
  // ephemeral-storage limits: eviction/local-storage (the eviction manager).
  'spec.containers.resources.limits': honoured('kuberuntime/config', {
    extended: {
      fate: 'refused',
      when: 'an extended resource (nvidia.com/gpu, …)',
      reason: 'no device plugin serves it on this host; supported: cpu, memory, ephemeral-storage, hugepages-*',
    },
  }),
  'spec.containers.resources.requests': honoured('kuberuntime/config', {
    extended: {
      fate: 'refused',
      when: 'an extended resource (nvidia.com/gpu, …)',
      reason: 'no device plugin serves it on this host; supported: cpu, memory, ephemeral-storage, hugepages-*',
    },
  }),
  'spec.containers.resources.claims': refused('dynamic resource allocation needs a cluster; not supported'),
  'spec.containers.lifecycle': honoured('kuberuntime/manager'),
  'spec.containers.lifecycle.stopSignal': warned(
    "not sent: containerd 1.6's CRI has no field for it; the image's STOPSIGNAL (or SIGTERM) is sent",
  ),
  'spec.containers.securityContext': honoured('kuberuntime/config'),
  'spec.containers.securityContext.runAsUser': honoured('kuberuntime/config'),
  'spec.containers.securityContext.runAsGroup': honoured('kuberuntime/config'),
  'spec.containers.securityContext.runAsNonRoot': honoured('kuberuntime/config'),
  'spec.containers.securityContext.privileged': honoured('kuberuntime/config (with --allow-privileged)'),
  'spec.containers.securityContext.allowPrivilegeEscalation': honoured('kuberuntime/config'),
  'spec.containers.securityContext.readOnlyRootFilesystem': honoured('kuberuntime/config'),
  'spec.containers.securityContext.capabilities': honoured('kuberuntime/config'),
  'spec.containers.securityContext.capabilities.add': honoured('kuberuntime/config'),
  'spec.containers.securityContext.capabilities.drop': honoured('kuberuntime/config'),
  'spec.containers.securityContext.procMount': honoured('kuberuntime/config', {
    unmasked: { fate: 'refused', when: 'Unmasked', reason: 'needs a user namespace (hostUsers: false), which podctl does not support' },
  }),
  'spec.containers.securityContext.windowsOptions': warned('ignored: Windows only'),
  'spec.containers.volumeMounts': honoured('volumes/manager'),
  'spec.containers.volumeMounts.name': honoured('volumes/manager'),
  'spec.containers.volumeMounts.mountPath': honoured('volumes/manager'),
  'spec.containers.volumeMounts.readOnly': honoured('volumes/manager'),
  'spec.containers.volumeMounts.recursiveReadOnly': honoured('volumes/manager'),
  'spec.containers.volumeMounts.subPath': honoured('volumes/subpath'),
  'spec.containers.volumeMounts.subPathExpr': honoured('volumes/subpath'),
  'spec.containers.volumeMounts.mountPropagation': honoured('volumes/manager', {
    bidirectional: {
      fate: 'refused',
      when: 'Bidirectional without privileged',
      reason: 'Bidirectional mount propagation needs a privileged container',
    },
  }),
  'spec.containers.volumeDevices': refused('raw block volumes need a PersistentVolumeClaim, which one host does not provide'),
};

// Both security contexts. AppArmor: passed to the runtime; a profile other than Unconfined on a host
// without AppArmor is refused at admission (reason AppArmor). SELinux: passed to the runtime; a label on a
// host without SELinux, where containerd would apply none, is refused at admission (reason SELinux).
for (const sc of ['spec.securityContext', 'spec.containers.securityContext']) {
  for (const f of ['appArmorProfile', 'appArmorProfile.type', 'appArmorProfile.localhostProfile'])
    table[`${sc}.${f}`] = honoured('kuberuntime/config, admission');
  table[`${sc}.seLinuxOptions`] = honoured('kuberuntime/config, admission', {
    noSELinux: {
      fate: 'refused',
      when: 'a label on a host without SELinux',
      reason: 'refused at admission (SELinux): the runtime would apply no label',
    },
  });
  for (const f of ['seLinuxOptions.user', 'seLinuxOptions.role', 'seLinuxOptions.type', 'seLinuxOptions.level'])
    table[`${sc}.${f}`] = honoured('kuberuntime/config, admission');
  table[`${sc}.seccompProfile`] = honoured('kuberuntime/config');
  table[`${sc}.seccompProfile.type`] = honoured('kuberuntime/config');
  table[`${sc}.seccompProfile.localhostProfile`] = honoured('kuberuntime/config');
}

// Volume types one host has no driver for.
for (const t of [
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'csi',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'glusterfs',
  'image',
  'iscsi',
  'nfs',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'rbd',
  'scaleIO',
  'storageos',
  'vsphereVolume',
]) {
  table[`spec.volumes.${t}`] = OTHER_VOLUME;
}

/**
 * The subtrees whose every field shares its parent's fate: the probe and
 * hook handlers, env sources, and the payload volumes. Listed here rather
 * than field by field; the coverage test still walks every path.
 */
const HONOURED_SUBTREES: [string, string][] = [
  ['spec.affinity', 'admission (required node affinity; the rest is warned)'],
  ['spec.containers.env', 'kuberuntime/env'],
  ['spec.containers.envFrom', 'kuberuntime/env'],
  ['spec.containers.ports', 'kuberuntime/config (CNI portmap)'],
  ['spec.containers.livenessProbe', 'prober'],
  ['spec.containers.readinessProbe', 'prober'],
  ['spec.containers.startupProbe', 'prober'],
  ['spec.containers.lifecycle.postStart', 'kuberuntime/manager (hooks)'],
  ['spec.containers.lifecycle.preStop', 'kuberuntime/manager (hooks)'],
  ['spec.volumes.configMap', 'volumes/payload'],
  ['spec.volumes.secret', 'volumes/payload'],
  ['spec.volumes.downwardAPI', 'volumes/downward'],
  ['spec.volumes.projected', 'volumes/payload'],
];

/** Warned or refused entries cover their whole subtree; honoured ones name each field. */
function subtreeCovered(path: string): boolean {
  for (let p = parentOf(path); p; p = parentOf(p)) {
    const e = table[p];
    if (e && e.fate !== 'honoured') return true;
  }
  return false;
}

function parentOf(path: string): string | undefined {
  const i = path.lastIndexOf('.');
  return i < 0 ? undefined : path.slice(0, i);
}

/** The field paths of the v1 Pod, as the table keys them (init containers folded into containers). */
export function podFieldPaths(): string[] {
  const out = new Set<string>();
  const walk = (typeName: string, path: string, seen: string[]) => {
    for (const [k, child] of Object.entries(FIELD_TYPES[typeName] ?? {})) {
      const p = normalizeFieldPath(path ? `${path}.${k}` : k);
      out.add(p);
      if (child && child !== '*' && !seen.includes(child)) walk(child, p, [...seen, child]);
    }
  };
  walk(FIELD_ROOTS.Pod!, '', []);
  return [...out];
}

/** spec.initContainers.x -> spec.containers.x; list indices dropped. */
export function normalizeFieldPath(path: string): string {
  return path.replace(/\[[^\]]*\]/g, '').replace(/^spec\.initContainers(?=\.|$)/, 'spec.containers');
}

// The subtrees' own roots are entries; the fields under them are looked up through
// HONOURED_SUBTREES rather than written out at load, which walked the whole generated tree
// at every start of every command that validates.
for (const [root, by] of HONOURED_SUBTREES) table[root] ??= honoured(by);
const subtreeFates = new Map(HONOURED_SUBTREES.map(([root, by]) => [root, honoured(by)]));

/** The honoured subtree a path lies under, when no warned or refused entry above it takes over. */
function subtreeFate(path: string): FieldFate | undefined {
  for (const [root, fate] of subtreeFates) if (path.startsWith(`${root}.`)) return subtreeCovered(path) ? undefined : fate;
  return undefined;
}

export const POD_FIELDS: Readonly<Record<string, FieldFate>> = table;

/** The fate of a field path (indices allowed), or undefined when the table has no entry. */
export function fieldFate(path: string, fields: Readonly<Record<string, FieldFate>> = POD_FIELDS): FieldFate | undefined {
  const normal = normalizeFieldPath(path);
  return fields[normal] ?? subtreeFate(normal);
}

/** The paths the table does not account for: neither an entry nor under a warned or refused one. */
export function unaccountedFields(fields: Readonly<Record<string, FieldFate>> = POD_FIELDS): string[] {
  return podFieldPaths().filter((p) => {
    if (fields[p] || subtreeFate(p)) return false;
    for (let q = parentOf(p); q; q = parentOf(q)) if (fields[q] && fields[q]!.fate !== 'honoured') return false;
    return true;
  });
}

/** The README's "Fields one host cannot honour" table, rendered from POD_FIELDS. */
export function unsupportedFieldsMarkdown(): string {
  const rows = new Map<string, string[]>();
  const add = (field: string, fate: 'warned' | 'refused', reason: string) => {
    const key = `${fate === 'warned' ? 'warning' : 'error'} | ${reason}`;
    rows.set(key, [...(rows.get(key) ?? []), field]);
  };
  for (const [path, e] of Object.entries(POD_FIELDS)) {
    if (e.fate !== 'honoured') {
      if (!subtreeCovered(path)) add(`\`${path}\``, e.fate, e.reason);
      continue;
    }
    for (const x of Object.values(e.except ?? {})) add(`\`${path}\`: ${x.when}`, x.fate, x.reason);
  }
  const lines = ['| field | podctl says | why |', '| --- | --- | --- |'];
  const sorted = [...rows.entries()].sort(([a], [b]) =>
    a.startsWith('error') === b.startsWith('error') ? 0 : a.startsWith('error') ? 1 : -1,
  );
  for (const [key, fields] of sorted) {
    const [says, why] = key.split(' | ');
    lines.push(`| ${fields.join(', ')} | ${says} | ${why!.replace(/\|/g, '\\|')} |`);
  }
  return lines.join('\n');
}
