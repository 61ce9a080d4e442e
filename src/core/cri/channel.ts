import grpc from '@grpc/grpc-js';
import { normalizeEndpoint } from './endpoint.js';
import { GrpcStatus, type GrpcFailure } from './errors.js';

/**
 * The options of every gRPC channel podctl opens to a runtime's socket. grpc-js shares one
 * connection (subchannel) between the channels to the same address with the same options, so the
 * CRI client and containerd's event stream use one connection to containerd.
 */
export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // CRI answers can be large: ListContainers at 5,000 pods is some 17 MB.
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  // HTTP/2 flow control: with the default 64 KB window such a list waits for hundreds of
  // WINDOW_UPDATE round trips between the two processes. grpc-go (the kubelet's client) grows its
  // window by BDP estimation up to 16 MB; this client starts there.
  'grpc-node.flow_control_window': 16 * 1024 * 1024,
  // The kubelet's reconnect backoff to the runtime (100 ms, at most 3 s), not grpc's default (1 s to
  // 120 s): a restarted containerd is back in its socket within a second or two.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 3000,
};

/** A grpc-js client on a runtime's unix socket (grpc-js reads unix:///path targets itself). */
export function runtimeClient(endpoint: string): grpc.Client {
  return new grpc.Client(normalizeEndpoint(endpoint), grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
}

/** A request already encoded (client.ts encodes it before the call, to report a bad one as its own). */
export const passBytes = (bytes: Buffer): Buffer => bytes;

/** The bytes of a finished message as a Buffer, without a copy (protobufjs's Writer gives one under Node). */
export const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** A failure of a call that never reached grpc-js, or that podctl ended (a handler that threw). */
export function failure(code: GrpcStatus, details: string): GrpcFailure {
  return Object.assign(new Error(details), { code, details });
}

/**
 * A server-streaming call, each message handed to onMessage. A cancel ends it with nothing reported;
 * a handler that throws ends it with INTERNAL (no message reaches the handler after that), the channel
 * and its other calls going on.
 */
export function serverStream<Res>(
  client: grpc.Client,
  path: string,
  request: Buffer,
  decode: (buf: Buffer) => Res,
  handlers: { onMessage(message: Res): void; onEnd(): void; onError(err: GrpcFailure): void },
): { cancel(): void } {
  let over = false;
  let call: grpc.ClientReadableStream<Res>;
  try {
    call = client.makeServerStreamRequest<Buffer, Res>(path, passBytes, decode, request, new grpc.Metadata(), {});
  } catch (err) {
    // grpc-js throws at once on a channel already closed.
    const closed = failure(GrpcStatus.UNAVAILABLE, (err as Error).message);
    queueMicrotask(() => over || handlers.onError(closed));
    return { cancel: () => (over = true) };
  }
  call.on('data', (message: Res) => {
    if (over) return;
    try {
      handlers.onMessage(message);
    } catch (err) {
      over = true;
      call.cancel();
      handlers.onError(failure(GrpcStatus.INTERNAL, `the handler failed on a message: ${(err as Error).message}`));
    }
  });
  call.on('error', (err: grpc.ServiceError) => {
    if (over) return;
    over = true;
    handlers.onError(err);
  });
  call.on('end', () => {
    if (over) return;
    over = true;
    handlers.onEnd();
  });
  return {
    cancel: () => {
      over = true;
      call.cancel();
    },
  };
}

export { grpc };
