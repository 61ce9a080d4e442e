import { existsSync } from 'node:fs';
import type { ServiceError } from '@grpc/grpc-js';
import { CriError, GrpcStatus, mapGrpcError, noRuntimeError } from './errors.js';
import { loadGrpc } from './grpc-lazy.js';
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
  /** TaskExit: when the process exited (epoch ms). */
  exitedAt?: number;
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
  event?: { '@type'?: string; containerId?: string; id?: string; exitStatus?: number; exitedAt?: { seconds?: number; nanos?: number } | null } | null;
}

type EventsCall = import('@grpc/grpc-js').ClientReadableStream<EnvelopeOutput>;
interface EventsClient {
  Subscribe(request: { filters: string[] }): EventsCall;
  close(): void;
}
type EventsClientConstructor = new (address: string, credentials: unknown, options?: Record<string, number>) => EventsClient;

let loaded: Promise<{ Events: EventsClientConstructor; insecure: () => unknown }> | undefined;

/**
 * The one place that builds containerd's event client: from the descriptor compiled at build time
 * from proto/containerd (scripts/gen-cri-types.mjs), with protobufjs/light, as the CRI's. gRPC and
 * the descriptor load on the first subscription, not when podctl starts. Event payloads
 * (google.protobuf.Any) come back decoded, with '@type' naming the message.
 */
export function loadContainerdEvents(): Promise<{ Events: EventsClientConstructor; insecure: () => unknown }> {
  loaded ??= (async () => {
    const [grpc, { default: protobuf }, { containerdDescriptor }] = await Promise.all([
      loadGrpc(),
      import('protobufjs/light.js'),
      import('./generated/containerd-descriptor.js'),
    ]);
    const root = protobuf.Root.fromJSON(containerdDescriptor);
    const method = root.lookupService('containerd.services.events.v1.Events').methods.Subscribe!;
    method.resolve();
    const req = method.resolvedRequestType!;
    const res = method.resolvedResponseType!;
    const conversion: import('protobufjs').IConversionOptions = { longs: Number, enums: String, defaults: true, json: true };
    const Events = grpc.makeGenericClientConstructor(
      {
        Subscribe: {
          path: '/containerd.services.events.v1.Events/Subscribe',
          requestStream: false,
          responseStream: true,
          requestSerialize: (value: object) => Buffer.from(req.encode(req.fromObject(value)).finish()),
          requestDeserialize: (buf: Buffer) => req.toObject(req.decode(buf), conversion),
          responseSerialize: (value: object) => Buffer.from(res.encode(res.fromObject(value)).finish()),
          responseDeserialize: (buf: Buffer) => res.toObject(res.decode(buf), conversion),
        },
      },
      'containerd.services.events.v1.Events',
    ) as unknown as EventsClientConstructor;
    return { Events, insecure: () => grpc.credentials.createInsecure() };
  })();
  return loaded;
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
  const toMs = (t: { seconds?: number; nanos?: number }) => (t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
  const execId = !isContainerTopic && e?.id && e.id !== containerId ? e.id : undefined;
  return {
    topic,
    namespace: envelope.namespace ?? '',
    timestamp: ts ? toMs(ts) : 0,
    containerId,
    ...(execId ? { execId } : {}),
    ...(topic === '/tasks/exit' || topic === '/tasks/delete' ? { exitStatus: e?.exitStatus ?? 0 } : {}),
    ...(topic === '/tasks/exit' && e?.exitedAt?.seconds ? { exitedAt: toMs(e.exitedAt) } : {}),
  };
}

/** containerd's event service on its gRPC socket (the one that serves the CRI). */
export class ContainerdEventsClient implements ContainerdEventSource {
  private client?: EventsClient;

  constructor(
    readonly endpoint: string,
    private readonly namespace = CRI_NAMESPACE,
  ) {}

  subscribe(handlers: ContainerdEventHandlers): { cancel(): void } {
    if (!existsSync(socketPath(this.endpoint))) {
      const err = noRuntimeError(this.endpoint, 'Subscribe');
      queueMicrotask(() => handlers.onError(err));
      return { cancel: () => undefined };
    }
    let cancelled = false;
    let call: EventsCall | undefined;
    loadContainerdEvents().then(
      ({ Events, insecure }) => {
        if (cancelled) return;
        this.client ??= new Events(this.endpoint, insecure(), { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2000 });
        // Subscribe filters on the envelope's namespace itself: no containerd-namespace header is needed.
        call = this.client.Subscribe({ filters: containerdEventFilters(this.namespace) });
        call.on('data', (envelope: EnvelopeOutput) => {
          const event = toContainerdEvent(envelope);
          if (event) handlers.onEvent(event);
        });
        call.on('error', (err: ServiceError) => {
          if (cancelled && err.code === GrpcStatus.CANCELLED) return;
          handlers.onError(mapGrpcError(err, 'containerd Events/Subscribe', this.endpoint, 0));
        });
        call.on('end', () => {
          if (!cancelled) handlers.onEnd?.();
        });
      },
      (err: unknown) => handlers.onError(new CriError(`containerd's event service could not be loaded: ${(err as Error).message}`, { code: GrpcStatus.INTERNAL, method: 'Subscribe', endpoint: this.endpoint, details: String(err) })),
    );
    return {
      cancel: () => {
        cancelled = true;
        call?.cancel();
      },
    };
  }

  close(): void {
    this.client?.close();
  }
}
