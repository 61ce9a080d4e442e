/**
 * Labels and annotations as the kubelet writes them (pkg/kubelet/kuberuntime
 * labels.go and pkg/kubelet/types/labels.go), so that any CRI tool sees
 * familiar keys and podctl rebuilds its view from the runtime alone.
 */
export const POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
export const CONTAINER_TYPE_LABEL = 'io.kubernetes.container.type';
/** podctl's own mark: it never touches sandboxes or containers without it. */
export const MANAGED_BY_LABEL = 'io.podctl.managed-by';
export const MANAGED_BY_VALUE = 'podctl';
/** Which podctl agent made a sandbox: `watch` cleans up only its own, never pods a `run` started. */
export const AGENT_LABEL = 'io.podctl.agent';

export const CONTAINER_HASH_ANNOTATION = 'io.kubernetes.container.hash';
export const CONTAINER_RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';
export const CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION = 'io.kubernetes.container.terminationMessagePath';
export const CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION = 'io.kubernetes.container.terminationMessagePolicy';
export const POD_TERMINATION_GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.terminationGracePeriod';
export const CONTAINER_PORTS_ANNOTATION = 'io.kubernetes.container.ports';
export const CONTAINER_PRESTOP_HANDLER_ANNOTATION = 'io.kubernetes.container.preStopHandler';
/** A compact copy of the container spec, so that a changed hash can be explained field by field. */
export const CONTAINER_SPEC_ANNOTATION = 'io.podctl.container.spec';
/** A copy of the pod spec on its sandbox, so debugging commands rebuild the v1 Pod without the agent that made it. */
export const POD_SPEC_ANNOTATION = 'io.podctl.pod.spec';
/**
 * The pod's host directories, recorded on its sandbox when it is created, so that whoever deletes the pod
 * (another --root-dir or --log-root, a debugging command) removes exactly those, mounts included.
 */
export const POD_DIR_ANNOTATION = 'io.podctl.pod.dir';
export const POD_LOG_DIR_ANNOTATION = 'io.podctl.pod.log-dir';
/** With a pod directory, the pod spec copy is a file there named by this hash of it (spec-copy.ts), not POD_SPEC_ANNOTATION. */
export const POD_SPEC_HASH_ANNOTATION = 'io.podctl.pod.spec-hash';
/** Keys podctl alone writes on a sandbox: a pod's own annotation of that name never reaches the runtime. */
export const RECORDED_ANNOTATIONS = [POD_DIR_ANNOTATION, POD_LOG_DIR_ANNOTATION, POD_SPEC_ANNOTATION, POD_SPEC_HASH_ANNOTATION];

/** Whether the container is an init container, a sidecar or an app container. */
export const CONTAINER_KIND_ANNOTATION = 'io.podctl.container.kind';

export type ContainerKind = 'init' | 'sidecar' | 'app';

/**
 * A debug container `podctl debug` added to a running pod (the kubelet's
 * ephemeral containers): never restarted, never part of the pod's phase,
 * readiness or restart counts, and removed with the pod's sandbox.
 */
export const EPHEMERAL_LABEL = 'io.podctl.ephemeral';

export interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
}

export function sandboxLabels(pod: PodIdentity, podLabels: Record<string, string> | undefined, agent: string): Record<string, string> {
  // The pod's own labels first: ours win on conflict, as in the kubelet.
  return {
    ...(podLabels ?? {}),
    [POD_NAME_LABEL]: pod.name,
    [POD_NAMESPACE_LABEL]: pod.namespace,
    [POD_UID_LABEL]: pod.uid,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [AGENT_LABEL]: agent,
  };
}

export function containerLabels(pod: PodIdentity, containerName: string): Record<string, string> {
  return {
    [POD_NAME_LABEL]: pod.name,
    [POD_NAMESPACE_LABEL]: pod.namespace,
    [POD_UID_LABEL]: pod.uid,
    [CONTAINER_NAME_LABEL]: containerName,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
  };
}

export function podIdentityFromLabels(labels: Record<string, string>): PodIdentity | undefined {
  const name = labels[POD_NAME_LABEL];
  const namespace = labels[POD_NAMESPACE_LABEL];
  const uid = labels[POD_UID_LABEL];
  if (!name || !namespace || !uid) return undefined;
  return { name, namespace, uid };
}

export function isManagedByPodctl(labels: Record<string, string> | undefined): boolean {
  return labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}
