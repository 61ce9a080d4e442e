import { existsSync } from 'node:fs';
import { CriError, GrpcStatus, mapGrpcError, noRuntimeError } from './errors.js';
import { socketPath } from './endpoint.js';
import type { grpc } from './channel.js';

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

interface Timestamp {
  seconds?: number;
  nanos?: number;
}

/** An Envelope with its event (a google.protobuf.Any) decoded by its type URL: '@type' and the message's fields. */
export interface EnvelopeOutput {
  timestamp?: Timestamp | null;
  namespace?: string;
  topic?: string;
  event?: { '@type'?: string; containerId?: string; id?: string; exitStatus?: number; exitedAt?: Timestamp | null } | null;
}

/** Subscribe's request and answer, as bytes. */
interface SubscribeCodec {
  encode(request: { filters: string[] }): Buffer;
  decode(message: Buffer): EnvelopeOutput;
}

const SUBSCRIBE_PATH = '/containerd.services.events.v1.Events/Subscribe';

let loaded: Promise<SubscribeCodec> | undefined;

/**
 * Subscribe's codec, from the static module protobufjs-cli generates from proto/containerd at build
 * time (scripts/gen-cri-types.mjs), loaded on the first subscription, not when podctl starts. An
 * event's payload (a google.protobuf.Any) is decoded by the message its type URL names, among the
 * containerd.events messages of proto/containerd; another one keeps only its '@type'.
 */
export function loadContainerdEvents(): Promise<SubscribeCodec> {
  loaded ??= (async () => {
    const [{ default: pb }, { asBuffer }] = await Promise.all([import('../../generated/cri/containerd-pb.js'), import('./channel.js')]);
    type Message = {
      encode(m: object): { finish(): Uint8Array };
      decode(b: Uint8Array): object;
      fromObject(o: object): object;
      toObject(m: object, o: object): Record<string, unknown>;
    };
    const root = pb as unknown as {
      containerd: { services: { events: { v1: Record<string, Message> } }; events: Record<string, Message> };
    };
    const { SubscribeRequest, Envelope } = root.containerd.services.events.v1;
    const events = root.containerd.events;
    const conversion = { longs: Number, enums: String, defaults: true };
    return {
      encode: (request) => asBuffer(SubscribeRequest!.encode(SubscribeRequest!.fromObject(request)).finish()),
      decode: (message) => {
        // protobufjs's own google.protobuf types keep the .proto's field names (type_url).
        const envelope = Envelope!.toObject(Envelope!.decode(message), conversion) as Omit<EnvelopeOutput, 'event'> & {
          event?: { type_url?: string; value?: Uint8Array } | null;
        };
        const any = envelope.event;
        if (!any) return { ...envelope, event: null };
        const typeUrl = any.type_url ?? '';
        const typeName = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
        const type =
          typeName.startsWith('containerd.events.') && Object.hasOwn(events, typeName.slice('containerd.events.'.length))
            ? events[typeName.slice('containerd.events.'.length)]
            : undefined;
        const fields = type && any.value ? type.toObject(type.decode(any.value), conversion) : {};
        return { ...envelope, event: { '@type': typeName, ...fields } };
      },
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

/**
 * containerd's event service on its gRPC socket (the one that serves the CRI), with grpc-js on the
 * channel options of the CRI client: the two share one connection (channel.ts).
 */
export class ContainerdEventsClient implements ContainerdEventSource {
  private client?: grpc.Client;

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
    Promise.all([loadContainerdEvents(), import('./channel.js')]).then(
      ([codec, { runtimeClient, serverStream }]) => {
        if (cancelled) return;
        this.client ??= runtimeClient(this.endpoint);
        // Subscribe filters on the envelope's namespace itself: no containerd-namespace header is needed.
        call = serverStream(this.client, SUBSCRIBE_PATH, codec.encode({ filters: containerdEventFilters(this.namespace) }), codec.decode, {
          onMessage: (envelope) => {
            const event = toContainerdEvent(envelope);
            if (event) handlers.onEvent(event);
          },
          onEnd: () => {
            if (!cancelled) handlers.onEnd?.();
          },
          onError: (err) => {
            if (cancelled && err.code === GrpcStatus.CANCELLED) return;
            handlers.onError(mapGrpcError(err, 'containerd Events/Subscribe', this.endpoint, 0));
          },
        });
      },
      (err: unknown) =>
        handlers.onError(
          new CriError(`containerd's event service could not be loaded: ${(err as Error).message}`, {
            code: GrpcStatus.INTERNAL,
            method: 'Subscribe',
            endpoint: this.endpoint,
            details: String(err),
          }),
        ),
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
