import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { createWebSocketStream, WebSocketServer } from 'ws';
import { errorMessage } from '../../errors.js';
import { forwardConnection } from '../../exec/portforward.js';
import { FlowGate, spdySession, type SpdyConnection, type SpdyStream } from '../../exec/spdy.js';
import { POD_UID_LABEL } from '../../kuberuntime/labels.js';
import { KubeStatusError } from '../status.js';
import type { PodStreamContext } from './context.js';
import { writeSocketStatus } from './spdy.js';

/**
 * pods/portforward on the kube API, as the kube-apiserver and the kubelet serve it: SPDY/3.1 with the
 * portforward.k8s.io protocol, either tunnelled in WebSocket binary messages (kubectl 1.30+,
 * `SPDY/3.1+portforward.k8s.io`) or over a plain `Upgrade: SPDY/3.1`. Each forwarded connection is a
 * pair of SPDY streams (error, then data) that share a requestID; each pair gets its own CRI
 * PortForward URL and so its own v4 WebSocket to the runtime's streaming server.
 */
export const PORTFORWARD_PROTOCOL = 'portforward.k8s.io';
export const TUNNEL_PROTOCOL = `SPDY/3.1+${PORTFORWARD_PROTOCOL}`;
const STREAM_PROTOCOL_HEADER = 'x-stream-protocol-version';

/** What the router hands over: of PodStreamContext, the pod and the two CRI calls port-forward makes. */
export type PortForwardContext = Pick<PodStreamContext, 'pod' | 'log'> & {
  cri: Pick<PodStreamContext['cri'], 'portForward' | 'listPodSandbox'>;
};

export interface PortForwardOptions {
  /** How long the second stream of a pair may take (the kubelet's stream creation timeout). */
  pairTimeoutMs?: number;
  /** Bytes a stream may hold unread before the whole connection stops being read. */
  streamHighWaterMark?: number;
}

const PAIR_TIMEOUT_MS = 30_000;
const STREAM_HIGH_WATER_MARK = 1 << 20;

export function handlePortForward(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  _url: URL,
  ctx: PortForwardContext,
  opts: PortForwardOptions = {},
): void {
  serve(req, socket, head, ctx, opts).catch((err) => {
    ctx.log?.(`port-forward: ${errorMessage(err)}`);
    if (err instanceof KubeStatusError) writeSocketStatus(socket, err);
    else socket.destroy();
  });
}

async function serve(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: PortForwardContext, opts: PortForwardOptions) {
  const upgrade = tokens(req.headers.upgrade).map((t) => t.toLowerCase());
  const websocket = upgrade.includes('websocket');
  if (!websocket && !upgrade.includes('spdy/3.1')) throw new KubeStatusError(400, 'BadRequest', 'Upgrade request required');
  if (websocket && !tokens(req.headers['sec-websocket-protocol']).includes(TUNNEL_PROTOCOL))
    throw new KubeStatusError(400, 'BadRequest', 'unable to upgrade: no tunneling spdy protocols provided');
  if (!websocket) {
    const offered = tokens(req.headers[STREAM_PROTOCOL_HEADER]);
    if (!offered.length) throw new KubeStatusError(400, 'BadRequest', 'unable to upgrade: X-Stream-Protocol-Version is required');
    if (!offered.includes(PORTFORWARD_PROTOCOL))
      throw new KubeStatusError(
        403,
        'Forbidden',
        `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${PORTFORWARD_PROTOCOL}]`,
      );
  }
  const target = await sandboxOf(ctx);
  if (socket.destroyed) return;
  let wire: Duplex;
  let closeWire: () => void;
  if (websocket) {
    // "SPDY/3.1+portforward.k8s.io" has a "/", which RFC 6455 (and so ws) refuses in a subprotocol:
    // the handshake goes without it, and the answer names it (tunnelServer's 'headers').
    delete req.headers['sec-websocket-protocol'];
    const ws = await new Promise<WebSocket>((resolve) => tunnelServer.handleUpgrade(req, socket, head, resolve));
    wire = createWebSocketStream(ws);
    // The stream made from a WebSocket never says 'close': the WebSocket does.
    ws.on('close', () => wire.destroy());
    closeWire = () => ws.close(1000);
  } else {
    socket.write(
      ['HTTP/1.1 101 Switching Protocols', 'Connection: Upgrade', 'Upgrade: SPDY/3.1', `X-Stream-Protocol-Version: ${PORTFORWARD_PROTOCOL}`]
        .concat('', '')
        .join('\r\n'),
    );
    if (head.length) socket.unshift(head);
    wire = socket;
    closeWire = () => socket.end();
  }
  new PortForwardSession(wire, closeWire, target, ctx, opts);
}

const tunnelServer = new WebSocketServer({ noServer: true, perMessageDeflate: false });
tunnelServer.on('headers', (headers: string[]) => headers.push(`Sec-WebSocket-Protocol: ${TUNNEL_PROTOCOL}`));

interface Target {
  sandboxId: string;
  /** The kubelet's names for the pod in its error texts: its full name (NAME_NAMESPACE) and UID. */
  podName: string;
  uid: string;
}

async function sandboxOf(ctx: PortForwardContext): Promise<Target> {
  const { name = '', namespace = 'default', uid = '' } = ctx.pod.metadata ?? {};
  const sandboxes = uid ? await ctx.cri.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid }, state: { state: 'SANDBOX_READY' } }) : [];
  const sandbox = sandboxes.sort((a, b) => Number(b.createdAt) - Number(a.createdAt))[0];
  if (!sandbox) throw new KubeStatusError(400, 'BadRequest', `unable to upgrade connection: pod "${name}" has no ready sandbox`);
  return { sandboxId: sandbox.id, podName: `${name}_${namespace}`, uid };
}

interface Pair {
  requestId: string;
  error?: SpdyStream;
  data?: SpdyStream;
  timer?: NodeJS.Timeout;
}

/** One SPDY connection: its streams paired by requestID, each pair bridged to the runtime. */
class PortForwardSession {
  private readonly pairs = new Map<string, Pair>();
  private readonly streams = new Map<number, SpdyStream>();
  private readonly congested = new Set<SpdyStream>();
  private readonly gate: FlowGate;
  private readonly connection: SpdyConnection;

  constructor(
    wire: Duplex,
    closeWire: () => void,
    private readonly target: Target,
    private readonly ctx: PortForwardContext,
    private readonly opts: PortForwardOptions,
  ) {
    this.gate = new FlowGate(wire);
    this.connection = spdySession(this.gate, true);
    this.connection.on('error', (err: Error) => {
      ctx.log?.(`port-forward: ${err.message}`);
      this.gate.destroy();
    });
    this.connection.on('close', () => {
      for (const p of this.pairs.values()) clearTimeout(p.timer);
      closeWire();
    });
    this.connection.on('stream', (stream) => this.onStream(stream));
    // Data for a stream nobody reads yet: past the mark, stop reading the connection (see FlowGate).
    this.connection.on('frame', (frame: { type: string; id?: number }) => {
      const stream = frame.type === 'DATA' && frame.id !== undefined ? this.streams.get(frame.id) : undefined;
      if (stream) process.nextTick(() => this.checkBuffered(stream));
    });
  }

  private get highWaterMark() {
    return this.opts.streamHighWaterMark ?? STREAM_HIGH_WATER_MARK;
  }

  private checkBuffered(stream: SpdyStream) {
    if (!stream.destroyed && stream.readableLength > this.highWaterMark) {
      this.congested.add(stream);
      this.gate.hold();
    } else if (this.congested.delete(stream) && this.congested.size === 0) this.gate.release();
  }

  private onStream(stream: SpdyStream) {
    // A reset from the client is an 'error' of the stream: it only ends that stream.
    stream.on('error', () => {});
    const headers = lowerKeys(stream.headers);
    const port = headers.port ?? '';
    const type = headers.streamtype;
    // The kubelet refuses a stream with a bad port or stream type by resetting it.
    if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535 || (type !== 'error' && type !== 'data')) {
      this.ctx.log?.(`port-forward: refused a stream with port "${port}" and streamType "${type}"`);
      stream.abort();
      return;
    }
    stream.respond(200, {});
    this.streams.set(stream.id, stream);
    stream.on('resume', () => setImmediate(() => this.checkBuffered(stream)));
    stream.once('close', () => {
      this.streams.delete(stream.id);
      this.checkBuffered(stream);
    });
    // Clients before request IDs: the kubelet's best guess from consecutive stream IDs.
    const requestId = headers.requestid ?? String(type === 'error' ? stream.id : stream.id - 2);
    let pair = this.pairs.get(requestId);
    if (!pair) {
      const created: Pair = { requestId };
      created.timer = setTimeout(() => this.timedOut(created), this.opts.pairTimeoutMs ?? PAIR_TIMEOUT_MS);
      this.pairs.set(requestId, (pair = created));
    }
    if (pair[type]) {
      pair.error?.write(`error processing stream for request ${requestId}: ${type} stream already assigned`);
      stream.abort();
      return;
    }
    pair[type] = stream;
    if (pair.error && pair.data) {
      clearTimeout(pair.timer);
      this.pairs.delete(requestId);
      void this.forward(pair.data, pair.error);
    }
  }

  private timedOut(pair: Pair) {
    this.pairs.delete(pair.requestId);
    pair.error?.end(`(conn=${this.target.podName}, request=${pair.requestId}) timed out waiting for streams`);
    pair.data?.end();
  }

  private async forward(data: SpdyStream, error: SpdyStream) {
    const port = Number(lowerKeys(data.headers).port);
    const { sandboxId, podName, uid } = this.target;
    try {
      // The runtime's URL is good for one connection: a new one for each pair.
      const url = await this.ctx.cri.portForward(sandboxId, [port]);
      await forwardConnection(url, port, data, { onError: (text) => error.write(text) });
    } catch (err) {
      error.write(`error forwarding port ${port} to pod ${podName}, uid ${uid}: ${errorMessage(err)}`);
      data.end();
    } finally {
      error.end();
    }
  }
}

function tokens(value: string | string[] | undefined): string[] {
  return (Array.isArray(value) ? value : [value ?? ''])
    .flatMap((v) => v.split(','))
    .map((t) => t.trim())
    .filter(Boolean);
}

function lowerKeys(headers: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}
