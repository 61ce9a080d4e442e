import { existsSync } from 'node:fs';
import { CriError, GrpcStatus, mapGrpcError, noRuntimeError } from './errors.js';
import { GrpcChannel } from './transport.js';
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

/** Subscribe's request and answer, as bytes. */
interface SubscribeCodec {
  encode(request: { filters: string[] }): Uint8Array;
  decode(message: Buffer): EnvelopeOutput;
}

const SUBSCRIBE_PATH = '/containerd.services.events.v1.Events/Subscribe';

let loaded: Promise<SubscribeCodec> | undefined;

/**
 * The one place that builds Subscribe's codec: from the descriptor compiled at build time from
 * proto/containerd (scripts/gen-cri-types.mjs), with protobufjs/light. It loads on the first
 * subscription, not when podctl starts. Event payloads (google.protobuf.Any) come back decoded,
 * with '@type' naming the message. The call itself goes over the CRI client's own HTTP/2
 * transport (transport.ts): no grpc-js, and no second kind of connection to containerd.
 */
export function loadContainerdEvents(): Promise<SubscribeCodec> {
  loaded ??= (async () => {
    const [{ default: protobuf }, { containerdDescriptor }] = await Promise.all([import('protobufjs/light.js'), import('./generated/containerd-descriptor.js')]);
    const root = protobuf.Root.fromJSON(containerdDescriptor);
    const method = root.lookupService('containerd.services.events.v1.Events').methods.Subscribe!;
    method.resolve();
    const req = method.resolvedRequestType!;
    const res = method.resolvedResponseType!;
    const conversion: import('protobufjs').IConversionOptions = { longs: Number, enums: String, defaults: true, json: true };
    return {
      encode: (request) => req.encode(req.fromObject(request)).finish(),
      decode: (message) => res.toObject(res.decode(message), conversion) as EnvelopeOutput,
    };
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
  private channel?: GrpcChannel;

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
    let call: { cancel(): void } | undefined;
    loadContainerdEvents().then(
      (codec) => {
        if (cancelled) return;
        // Envelopes are small: a window of 1 MB, and 4 MB at most a message (gRPC's default).
        this.channel ??= new GrpcChannel(socketPath(this.endpoint), { windowBytes: 1024 * 1024, maxMessageBytes: 4 * 1024 * 1024 });
        // Subscribe filters on the envelope's namespace itself: no containerd-namespace header is needed.
        call = this.channel.serverStream(
          SUBSCRIBE_PATH,
          codec.encode({ filters: containerdEventFilters(this.namespace) }),
          codec.decode,
          (envelope) => {
            const event = toContainerdEvent(envelope);
            if (event) handlers.onEvent(event);
          },
          (err) => {
            if (!err) {
              if (!cancelled) handlers.onEnd?.();
              return;
            }
            if (cancelled && err.code === GrpcStatus.CANCELLED) return;
            handlers.onError(mapGrpcError(err, 'containerd Events/Subscribe', this.endpoint, 0));
          },
        );
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
    this.channel?.close();
  }
}
