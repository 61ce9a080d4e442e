import { Flags } from '@oclif/core';
import { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR } from '../core/node/defaults.js';
import { nodeNameFlag } from './pod-flags.js';

/**
 * The node flags: their own module, so that declaring them loads none of what running a node needs (image
 * GC, log rotation, the kubelet's wiring: src/cli/node.ts) nor admission (src/cli/node-info.ts).
 */

// The defaults of the kubelet's image GC and log rotation (src/core/kuberuntime/image-gc.ts and
// src/core/logs/rotation.ts, which load the GC and zlib): the same values, which a unit test checks.
export const IMAGE_GC_HIGH_THRESHOLD = 85;
export const IMAGE_GC_LOW_THRESHOLD = 80;
export const CONTAINER_LOG_MAX_FILES = 5;

/** Flags of the commands that run pods; the kubelet's admission flags among them. */
export const nodeFlags = {
  'node-labels': Flags.string({
    summary:
      'Labels of this node, key=value,… (kubelet --node-labels), over kubernetes.io/hostname, kubernetes.io/os and ' +
      'kubernetes.io/arch; nodeSelector and required nodeAffinity are matched against them.',
  }),
  'system-reserved': Flags.string({
    summary: 'Resources kept from pods for the system, e.g. cpu=100m,memory=100Mi (kubelet --system-reserved).',
  }),
  'kube-reserved': Flags.string({
    summary: 'Resources kept from pods for podctl and the runtime, e.g. cpu=100m,memory=100Mi (kubelet --kube-reserved).',
  }),
  'max-pods': Flags.integer({ summary: 'Pods this node admits at most (kubelet --max-pods).', default: 110, min: 1 }),
  'log-root': Flags.string({
    summary: 'Directory for container logs (<log-root>/<namespace>_<name>_<uid>/<container>/<n>.log).',
    env: 'PODCTL_LOG_ROOT',
    default: DEFAULT_LOG_ROOT,
  }),
  'node-name': nodeNameFlag,
  'allow-privileged': Flags.boolean({ summary: 'Allow privileged containers (securityContext.privileged: true); refused otherwise.' }),
  'runtime-handler': Flags.string({
    summary:
      'CRI runtime handler of pods without spec.runtimeClassName (runc or crun on the embedded runtime); ' +
      "a pod's RuntimeClass (node.k8s.io/v1, in the manifests) names its own. Default: the runtime's default.",
    env: 'PODCTL_RUNTIME_HANDLER',
  }),
  'root-dir': Flags.string({
    summary: 'State directory: per-pod files (<root-dir>/pods/<uid>, e.g. termination messages) and the API socket of its agent.',
    default: DEFAULT_ROOT_DIR,
    env: 'PODCTL_ROOT_DIR',
  }),
  'kubelet-config': Flags.string({
    summary:
      "A KubeletConfiguration file (kubelet.config.k8s.io/v1beta1), as the kubelet's --config: its fields " +
      '(containerLogMaxSize, imageGCHighThresholdPercent, maxPods, …) set the flags of the same meaning; ' +
      'a flag on the command line wins.',
    env: 'PODCTL_KUBELET_CONFIG',
  }),
  'maximum-dead-containers-per-container': Flags.integer({
    summary: "Dead instances kept per container, newest first (the kubelet's flag; -1: no bound).",
    default: 1,
    min: -1,
    helpGroup: 'GARBAGE COLLECTION',
  }),
  'maximum-dead-containers': Flags.integer({
    summary: "Dead containers kept on the host in all (the kubelet's flag; -1: no bound).",
    default: -1,
    min: -1,
    helpGroup: 'GARBAGE COLLECTION',
  }),
  'image-gc-high-threshold': Flags.integer({
    summary: "Disk usage (%) of the image filesystem at which unused images are removed (the kubelet's flag; 100: never).",
    default: IMAGE_GC_HIGH_THRESHOLD,
    min: 0,
    max: 100,
    helpGroup: 'GARBAGE COLLECTION',
  }),
  'image-gc-low-threshold': Flags.integer({
    summary: "Disk usage (%) image GC frees down to (the kubelet's flag).",
    default: IMAGE_GC_LOW_THRESHOLD,
    min: 0,
    max: 100,
    helpGroup: 'GARBAGE COLLECTION',
  }),
  'image-minimum-gc-age': Flags.string({
    summary: "An unused image is not removed before it has been known this long (the kubelet's flag).",
    default: '2m',
    helpGroup: 'GARBAGE COLLECTION',
  }),
  'container-log-max-size': Flags.string({
    summary: "Rotate a container's log once it reaches this size (a quantity such as 10Mi; 0 turns rotation off), as the kubelet's flag.",
    default: '10Mi',
    helpGroup: 'LOGS',
  }),
  'container-log-max-files': Flags.integer({
    summary: "Log files kept per container, the current one included (older ones gzipped), as the kubelet's flag.",
    default: CONTAINER_LOG_MAX_FILES,
    min: 2,
    helpGroup: 'LOGS',
  }),
  'container-log-monitor-interval': Flags.string({
    summary: "How often log sizes are checked for rotation (the kubelet's containerLogMonitorInterval).",
    default: '10s',
    helpGroup: 'LOGS',
  }),
};
