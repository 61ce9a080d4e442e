/**
 * The column definitions of the API server's printers (pkg/printers/internalversion/printers.go) for the
 * resources this node serves; descriptions are the fields' API documentation, as SwaggerDoc() gives them.
 */

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

const DOC = {
  'ObjectMeta.name':
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow ' +
    'a client to request the generation of an appropriate name automatically. Name is primarily intended for ' +
    'creation idempotence and configuration definition. Cannot be updated. More info: ' +
    'https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
  'ObjectMeta.creationTimestamp':
    'CreationTimestamp is a timestamp representing the server time when this object was created. It is not ' +
    'guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is ' +
    'represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: ' +
    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
  'PodStatus.podIP': 'podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
  'PodSpec.nodeName':
    'NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by ' +
    'the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible ' +
    'for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled ' +
    'on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename',
  'PodStatus.nominatedNodeName':
    'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right ' +
    'away as preemption victims receive their graceful termination periods. This field does not guarantee that the ' +
    'pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become ' +
    'available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that ' +
    'is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is ' +
    'scheduled.',
  'PodSpec.readinessGates':
    'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers ' +
    'are ready AND all conditions specified in the readiness gates have status equal to "True" More info: ' +
    'https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
  'NodeSystemInfo.kubeletVersion': 'Kubelet Version reported by the node.',
  'NodeStatus.addresses':
    'List of addresses reachable to the node. Queried from cloud provider, if available. More info: ' +
    'https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, ' +
    'but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers ' +
    'should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should ' +
    'assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this ' +
    "may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward " +
    'API (status.hostIP).',
  'NodeSystemInfo.osImage': 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
  'NodeSystemInfo.kernelVersion': "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
  'NodeSystemInfo.containerRuntimeVersion':
    'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
  'Event.lastTimestamp': 'The time at which the most recent occurrence of this event was recorded.',
  'Event.type': 'Type of this event (Normal, Warning), new types could be added in the future',
  'Event.reason':
    'This should be a short, machine understandable string that gives the reason for the transition into the ' + "object's current status.",
  'Event.involvedObject': 'The object that this event is about.',
  'ObjectReference.fieldPath':
    'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go ' +
    'field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is ' +
    'to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to ' +
    'the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" ' +
    '(container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing ' +
    'a part of an object.',
  'Event.source': 'The component reporting this event. Should be a short machine understandable string.',
  'Event.message': 'A human-readable description of the status of this operation.',
  'Event.firstTimestamp': 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)',
  'Event.count': 'The number of times this event has occurred.',
  'Secret.type':
    'Used to facilitate programmatic handling of secret data. More info: ' +
    'https://kubernetes.io/docs/concepts/configuration/secret/#secret-types',
  'Secret.data':
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The " +
    'serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly ' +
    'non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4',
  'ConfigMap.data':
    "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. " +
    'Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap ' +
    'with the keys in the BinaryData field, this is enforced during validation process.',
} as const;

const col = (name: string, type: string, description: string, o: { format?: string; priority?: number } = {}): TableColumnDefinition => ({
  name,
  type,
  format: o.format ?? '',
  description,
  priority: o.priority ?? 0,
});
const nameColumn = (priority = 0) => col('Name', 'string', DOC['ObjectMeta.name'], { format: 'name', priority });
const ageColumn = () => col('Age', 'string', DOC['ObjectMeta.creationTimestamp']);
const wide = { priority: 1 };

export const COLUMNS = {
  pods: [
    nameColumn(),
    col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
    col('Status', 'string', 'The aggregate status of the containers in this pod.'),
    col(
      'Restarts',
      'string',
      'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    ),
    ageColumn(),
    col('IP', 'string', DOC['PodStatus.podIP'], wide),
    col('Node', 'string', DOC['PodSpec.nodeName'], wide),
    col('Nominated Node', 'string', DOC['PodStatus.nominatedNodeName'], wide),
    col('Readiness Gates', 'string', DOC['PodSpec.readinessGates'], wide),
  ],
  events: [
    col('Last Seen', 'string', DOC['Event.lastTimestamp']),
    col('Type', 'string', DOC['Event.type']),
    col('Reason', 'string', DOC['Event.reason']),
    col('Object', 'string', DOC['Event.involvedObject']),
    col('Subobject', 'string', DOC['ObjectReference.fieldPath'], wide),
    col('Source', 'string', DOC['Event.source'], wide),
    col('Message', 'string', DOC['Event.message']),
    col('First Seen', 'string', DOC['Event.firstTimestamp'], wide),
    col('Count', 'string', DOC['Event.count'], wide),
    nameColumn(1),
  ],
  configmaps: [nameColumn(), col('Data', 'string', DOC['ConfigMap.data']), ageColumn()],
  secrets: [nameColumn(), col('Type', 'string', DOC['Secret.type']), col('Data', 'string', DOC['Secret.data']), ageColumn()],
  nodes: [
    nameColumn(),
    col('Status', 'string', 'The status of the node'),
    col('Roles', 'string', 'The roles of the node'),
    ageColumn(),
    col('Version', 'string', DOC['NodeSystemInfo.kubeletVersion']),
    col('Internal-IP', 'string', DOC['NodeStatus.addresses'], wide),
    col('External-IP', 'string', DOC['NodeStatus.addresses'], wide),
    col('OS-Image', 'string', DOC['NodeSystemInfo.osImage'], wide),
    col('Kernel-Version', 'string', DOC['NodeSystemInfo.kernelVersion'], wide),
    col('Container-Runtime', 'string', DOC['NodeSystemInfo.containerRuntimeVersion'], wide),
  ],
  namespaces: [nameColumn(), col('Status', 'string', 'The status of the namespace'), ageColumn()],
} satisfies Record<string, TableColumnDefinition[]>;

export type TableResource = keyof typeof COLUMNS;
