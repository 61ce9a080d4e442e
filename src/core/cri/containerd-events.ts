import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packageRoot } from '../paths.js';
import { CriError, mapGrpcError, noRuntimeError } from './errors.js';
import { socketPath } from './endpoint.js';

/** The containerd namespace the CRI plugin keeps Kubernetes' sandboxes and containers in. */
export const CRI_NAMESPACE = 'k8s.io';

const TOPICS = ['/tasks/start', '/tasks/exit', '/tasks/oom', '/tasks/delete', '/containers/create', '/containers/delete'] as const;
export type ContainerdTopic = (typeof TOPICS)[number];

/** One containerd event, as the PLEG reads it. */
export interface ContainerdEvent {
  topic: ContainerdTopic;
  namespace: string;
  /** When containerd published it (epoch ms). */
  timestamp: number;
  /** The container (or sandbox) the event is about: a task's ID is its container's. */
  containerId: string;
  /** A process other than the task's init (an exec: a probe's ExecSync): its ID. */
  execId?: string;
  exitStatus?: number;
}

export interface ContainerdEventHandlers {
  onEvent(event: ContainerdEvent): void;
  onError(err: CriError): void;
  onEnd?(): void;
}

/** A source of containerd events: the real event service, or a fake one in tests. */
export interface ContainerdEventSource {
  readonly endpoint: string;
  subscribe(handlers: ContainerdEventHandlers): { cancel(): void };
  close(): void;
}

/** Subscribe's filters: the topics the PLEG maps, in one containerd namespace (filters are ORed). */
export function containerdEventFilters(namespace = CRI_NAMESPACE): string[] {
  return TOPICS.map((topic) => `namespace==${JSON.stringify(namespace)},topic==${JSON.stringify(topic)}`);
}

interface EnvelopeOutput {
  timestamp?: { seconds?: number; nanos?: number } | null;
  namespace?: string;
  topic?: string;
  /** The Any, decoded by its type URL (proto-loader's json option): '@type' and the message's fields. */
  event?: { '@type'?: string; containerId?: string; id?: string; exitStatus?: number } | null;
}

interface EventsClient extends grpc.Client {
  Subscribe(request: { filters: string[] }, metadata?: grpc.Metadata): grpc.ClientReadableStream<EnvelopeOutput>;
}
type EventsClientConstructor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => EventsClient;

let eventsService: EventsClientConstructor | undefined;

/**
 * The one place that loads containerd's event protos (proto/containerd) and builds the gRPC
 * client constructor, as the CRI's are loaded. Event payloads (google.protobuf.Any) come back
 * decoded, with '@type' naming the message.
 */
export function loadContainerdEvents(): EventsClientConstructor {
  if (!eventsService) {
    const dir = join(packageRoot(), 'proto', 'containerd');
    const def = protoLoader.loadSync('events-service.proto', { includeDirs: [dir], keepCase: false, longs: Number, enums: String, defaults: true, json: true });
    const pkg = grpc.loadPackageDefinition(def) as unknown as { containerd: { services: { events: { v1: { Events: EventsClientConstructor } } } } };
    eventsService = pkg.containerd.services.events.v1.Events;
  }
  return eventsService;
}

/** An Envelope as the PLEG reads it; undefined for a topic or payload it does not map. */
export function toContainerdEvent(envelope: EnvelopeOutput): ContainerdEvent | undefined {
  const topic = envelope.topic as ContainerdTopic | undefined;
  if (!topic || !(TOPICS as readonly string[]).includes(topic)) return undefined;
  const e = envelope.event;
  const isContainerTopic = topic.startsWith('/containers/');
  const containerId = (isContainerTopic ? e?.id : e?.containerId) ?? '';
  if (!containerId) return undefined;
  const ts = envelope.timestamp;
  const execId = !isContainerTopic && e?.id && e.id !== containerId ? e.id : undefined;
  return {
    topic,
    namespace: envelope.namespace ?? '',
    timestamp: ts ? (ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : 0,
    containerId,
    ...(execId ? { execId } : {}),
    ...(topic === '/tasks/exit' || topic === '/tasks/delete' ? { exitStatus: e?.exitStatus ?? 0 } : {}),
  };
}

/** containerd's event service on its gRPC socket (the one that serves the CRI). */
export class ContainerdEventsClient implements ContainerdEventSource {
  private readonly client: EventsClient;

  constructor(
    readonly endpoint: string,
    private readonly namespace = CRI_NAMESPACE,
  ) {
    const Events = loadContainerdEvents();
    this.client = new Events(endpoint, grpc.credentials.createInsecure(), { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2000 });
  }

  subscribe(handlers: ContainerdEventHandlers): { cancel(): void } {
    if (!existsSync(socketPath(this.endpoint))) {
      const err = noRuntimeError(this.endpoint, 'Subscribe');
      queueMicrotask(() => handlers.onError(err));
      return { cancel: () => undefined };
    }
    // Subscribe filters on the envelope's namespace itself: no containerd-namespace header is needed.
    const call = this.client.Subscribe({ filters: containerdEventFilters(this.namespace) });
    let cancelled = false;
    call.on('data', (envelope: EnvelopeOutput) => {
      const event = toContainerdEvent(envelope);
      if (event) handlers.onEvent(event);
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (cancelled && err.code === grpc.status.CANCELLED) return;
      handlers.onError(mapGrpcError(err, 'containerd Events/Subscribe', this.endpoint, 0));
    });
    call.on('end', () => {
      if (!cancelled) handlers.onEnd?.();
    });
    return {
      cancel: () => {
        cancelled = true;
        call.cancel();
      },
    };
  }

  close(): void {
    this.client.close();
  }
}
