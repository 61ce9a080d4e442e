import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../cri/client.js';
import { openRuntimeSpdy, type SpdyCommandStreams } from '../../exec/spdy.js';
import { Channel, type RuntimeCommand, type RuntimeCommandHandlers } from '../../exec/stream.js';
import { KubeStatusError } from '../status.js';
import { containerStatusOf, resolveContainer, runtimeId } from './container.js';
import {
  acceptSpdy,
  isSpdyUpgrade,
  REMOTECOMMAND_SPDY_PROTOCOLS,
  writeSocketStatus,
  type SpdyConnection,
  type SpdyStream,
} from './spdy.js';

/**
 * pods/exec and pods/attach, as the kube-apiserver's StreamTranslator serves them: the client's
 * protocol (WebSocket v5 or v4 from kubectl 1.30+, SPDY/3.1 from older ones) is bridged to the CRI
 * streaming server's remote command, spoken over SPDY v4 (containerd refuses WebSocket v5, and
 * only over SPDY can the command's stdin be closed, which `kubectl exec -i -- cat` ends on).
 */
export const WEBSOCKET_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const V5 = 'v5.channel.k8s.io';
/** v5's close channel: `[255, N]` ends the client's stream N (stdin). */
const CLOSE_CHANNEL = 255;
/** The kubelet's streamCreationTimeout: how long a SPDY client has to open its streams. */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;
/** Output held for a slow WebSocket client before the runtime's stream is paused. */
const OUTPUT_HIGH_WATER = 1024 * 1024;

export type RemoteCommandKind = 'exec' | 'attach';

export interface RemoteCommandOptions extends SpdyCommandStreams {
  container?: string;
  command: string[];
}

export interface RemoteCommandContext {
  pod: IPod;
  cri: CriClient;
  log?: (msg: string) => void;
  /** The runtime's side, given the CRI's URL (tests stand in for containerd here). */
  openRuntime?: (url: string, want: SpdyCommandStreams, handlers: RuntimeCommandHandlers) => Promise<RuntimeCommand>;
}

const badRequest = (message: string) => new KubeStatusError(400, 'BadRequest', message);

function parseBool(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return false;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(v)) return false;
  throw badRequest(`${name}: invalid boolean value "${v}" (expected true or false)`);
}

/** The query of an exec or attach (kubelet's remotecommand.NewOptions: with a tty there is no stderr). */
export function parseRemoteCommandOptions(kind: RemoteCommandKind, url: URL): RemoteCommandOptions {
  const tty = parseBool(url, 'tty');
  const opts: RemoteCommandOptions = {
    container: url.searchParams.get('container') || undefined,
    command: url.searchParams.getAll('command'),
    stdin: parseBool(url, 'stdin'),
    stdout: parseBool(url, 'stdout'),
    stderr: parseBool(url, 'stderr') && !tty,
    tty,
  };
  if (kind === 'exec' && opts.command.length === 0) throw badRequest('you must specify at least one command for the container');
  if (!opts.stdin && !opts.stdout && !opts.stderr) throw badRequest('you must specify at least 1 of stdin, stdout, stderr');
  return opts;
}

/** Asks the runtime for the command's streaming URL: the container must be running. */
async function runtimeUrl(kind: RemoteCommandKind, opts: RemoteCommandOptions, ctx: RemoteCommandContext): Promise<string> {
  const container = resolveContainer(ctx.pod, opts.container);
  const status = containerStatusOf(ctx.pod, container);
  const id = runtimeId(status?.containerID);
  if (!id || !status?.state?.running) throw badRequest(`container not found ("${container}")`);
  const io = { containerId: id, stdin: opts.stdin, stdout: opts.stdout, stderr: opts.stderr, tty: opts.tty };
  try {
    if (kind === 'exec') return (await ctx.cri.exec({ ...io, cmd: opts.command })).url;
    return await ctx.cri.attach(io);
  } catch (err) {
    throw new KubeStatusError(
      500,
      'InternalError',
      `error ${kind === 'exec' ? 'executing command in' : 'attaching to'} container: ${(err as Error).message}`,
    );
  }
}

/** A v4 status for a failure of the bridge itself (the runtime's own statuses are passed on as they are). */
function failureStatus(err: Error): string {
  return JSON.stringify({ metadata: {}, status: 'Failure', message: err.message, reason: 'InternalError', code: 500 });
}

const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: (offered: Set<string>) => WEBSOCKET_PROTOCOLS.find((p) => offered.has(p)) ?? false,
});

const offeredWebSocketProtocols = (req: IncomingMessage): string[] =>
  String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);

/** Serves an exec or attach upgrade; an error is answered as a Status on the socket before any upgrade. */
export function handleRemoteCommand(
  kind: RemoteCommandKind,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  url: URL,
  ctx: RemoteCommandContext,
): void {
  void serve(kind, req, socket, head, url, ctx).catch((err: unknown) => {
    const status = err instanceof KubeStatusError ? err : new KubeStatusError(500, 'InternalError', (err as Error).message);
    writeSocketStatus(socket, status);
  });
}

async function serve(kind: RemoteCommandKind, req: IncomingMessage, socket: Duplex, head: Buffer, url: URL, ctx: RemoteCommandContext) {
  const opts = parseRemoteCommandOptions(kind, url);
  const isWebSocket = String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
  if (isWebSocket && !offeredWebSocketProtocols(req).some((p) => WEBSOCKET_PROTOCOLS.includes(p)))
    throw badRequest(`unable to upgrade: the client offers none of the protocols ${WEBSOCKET_PROTOCOLS.join(', ')}`);
  if (!isWebSocket && !isSpdyUpgrade(req)) throw badRequest('Upgrade request required');
  const criUrl = await runtimeUrl(kind, opts, ctx);
  const open = ctx.openRuntime ?? openRuntimeSpdy;
  if (isWebSocket) wss.handleUpgrade(req as never, socket as never, head, (ws) => bridgeWebSocket(ws, criUrl, opts, open, ctx));
  else {
    const accepted = acceptSpdy(req, socket, head, REMOTECOMMAND_SPDY_PROTOCOLS);
    if (accepted) bridgeSpdy(accepted.session, accepted.protocol, criUrl, opts, open, ctx);
  }
}

type Open = NonNullable<RemoteCommandContext['openRuntime']>;

function bridgeWebSocket(ws: WebSocket, criUrl: string, opts: RemoteCommandOptions, open: Open, ctx: RemoteCommandContext): void {
  const v5 = ws.protocol === V5;
  // What the client sends before the runtime's side is open waits for it, in order.
  const early: Buffer[] = [];
  let runtime: RuntimeCommand | undefined;
  let paused = false;
  const send = (channel: number, data: Buffer | string, cb?: () => void) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(Buffer.concat([Buffer.from([channel]), Buffer.isBuffer(data) ? data : Buffer.from(data)]), cb);
  };
  const onSent = () => {
    if (paused && ws.bufferedAmount < OUTPUT_HIGH_WATER) {
      paused = false;
      runtime?.resume();
    }
  };
  const deliver = (msg: Buffer) => {
    if (!runtime || msg.length === 0) return;
    const body = msg.subarray(1);
    if (msg[0] === Channel.Stdin && opts.stdin) runtime.stdin(body);
    else if (msg[0] === Channel.Resize && opts.tty) runtime.resize(body);
    else if (v5 && msg[0] === CLOSE_CHANNEL && body[0] === Channel.Stdin) runtime.closeStdin();
  };
  ws.on('message', (data: Buffer) => (runtime ? deliver(data) : early.push(data)));
  ws.on('close', () => runtime?.close());
  ws.on('error', () => runtime?.close());
  const handlers: RuntimeCommandHandlers = {
    output: (channel, data) => {
      send(channel, data, onSent);
      if (ws.bufferedAmount < OUTPUT_HIGH_WATER) return true;
      paused = true;
      return false;
    },
    status: (text) => send(Channel.Error, text),
  };
  const initialResize = () => early.findLast((m) => m[0] === Channel.Resize)?.subarray(1);
  open(criUrl, { ...opts, initialResize }, handlers)
    .then((r) => {
      runtime = r;
      if (ws.readyState !== WebSocket.OPEN) return r.close();
      for (const m of early.splice(0)) deliver(m);
      return r.done;
    })
    .catch((err: Error) => {
      ctx.log?.(`kubeapi: ${opts.command.length ? 'exec' : 'attach'} in pod ${ctx.pod.metadata?.name}: ${err.message}`);
      send(Channel.Error, failureStatus(err));
    })
    .finally(() => {
      if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    });
}

/** The streams a SPDY client opens for these options (the kubelet waits for exactly these). */
function expectedStreams(protocol: string, opts: RemoteCommandOptions): string[] {
  const resize = opts.tty && (protocol === 'v4.channel.k8s.io' || protocol === 'v3.channel.k8s.io');
  return [
    'error',
    ...(opts.stdin ? ['stdin'] : []),
    ...(opts.stdout ? ['stdout'] : []),
    ...(opts.stderr ? ['stderr'] : []),
    ...(resize ? ['resize'] : []),
  ];
}

/** Before v4 the error stream carries the failure's message as text, and nothing on success. */
function errorStreamText(protocol: string, statusText: string): string {
  if (protocol === 'v4.channel.k8s.io') return statusText;
  try {
    const s = JSON.parse(statusText) as { status?: string; message?: string };
    return s.status === 'Success' ? '' : (s.message ?? statusText);
  } catch {
    return statusText;
  }
}

function bridgeSpdy(
  session: SpdyConnection,
  protocol: string,
  criUrl: string,
  opts: RemoteCommandOptions,
  open: Open,
  ctx: RemoteCommandContext,
): void {
  const want = expectedStreams(protocol, opts);
  const streams = new Map<string, SpdyStream>();
  const socket = session.socket;
  let started = false;
  const timer = setTimeout(() => {
    ctx.log?.(`kubeapi: timed out waiting for the client's streams (${want.filter((w) => !streams.has(w)).join(', ')})`);
    socket.destroy();
  }, STREAM_CREATION_TIMEOUT_MS);
  socket.once('close', () => clearTimeout(timer));
  session.on('error', () => socket.destroy());
  session.on('stream', (stream: SpdyStream) => {
    stream.on('error', () => undefined);
    const type = String(stream.headers.streamtype ?? '');
    stream.respond(200, {});
    if (!want.includes(type) || streams.has(type)) {
      ctx.log?.(`kubeapi: unexpected stream "${type}" from the client`);
      stream.resume();
      return;
    }
    streams.set(type, stream);
    if (!started && want.every((w) => streams.has(w))) {
      started = true;
      clearTimeout(timer);
      run();
    }
  });

  const run = () => {
    const error = streams.get('error')!;
    const stdin = streams.get('stdin');
    const resize = streams.get('resize');
    const outputs: Record<number, SpdyStream | undefined> = {
      [Channel.Stdout]: streams.get('stdout'),
      [Channel.Stderr]: streams.get('stderr'),
    };
    let runtime: RuntimeCommand | undefined;
    let statusWritten = false;
    const handlers: RuntimeCommandHandlers = {
      output: (channel, data) => {
        const out = outputs[channel];
        if (!out || out.destroyed) return true;
        if (out.write(data)) return true;
        out.once('drain', () => runtime?.resume());
        return false;
      },
      status: (text) => {
        statusWritten = true;
        const body = errorStreamText(protocol, text);
        if (body) error.write(body);
      },
    };
    const finish = () => {
      const ends = [error, ...Object.values(outputs)].filter((s): s is SpdyStream => !!s && !s.destroyed && !s.writableEnded);
      let left = ends.length;
      // GOAWAY, and spdy-transport ends the socket once what the streams wrote is out (ending it here cut off the status
      // still queued in its framer: kubectl then read no status and exited 0). Its end() also throws away what the framer
      // holds for a slow socket, so it waits for the client to answer a PING sent after the streams' last frames (their
      // FINs go on the ticks after 'finish'): the client has read everything before. One that keeps them open is cut off.
      const closeSession = () => {
        const cutOff = setTimeout(() => socket.destroy(), STREAM_CREATION_TIMEOUT_MS);
        cutOff.unref?.();
        socket.once('close', () => clearTimeout(cutOff));
        setImmediate(() => {
          if (!socket.destroyed) session.ping(() => session.end());
        });
      };
      if (left === 0) return closeSession();
      for (const s of ends) s.end(() => --left === 0 && closeSession());
    };
    socket.once('close', () => runtime?.close());
    // What the client's resize stream holds already is the size the command starts with.
    const initialResize = () => (resize?.read() as Buffer | null) ?? undefined;
    open(criUrl, { ...opts, initialResize }, handlers)
      .then((r) => {
        runtime = r;
        if (socket.destroyed) return r.close();
        stdin?.on('data', (d: Buffer) => r.stdin(d));
        stdin?.once('end', () => r.closeStdin());
        resize?.on('data', (d: Buffer) => r.resize(d));
        return r.done;
      })
      .catch((err: Error) => {
        ctx.log?.(`kubeapi: remote command in pod ${ctx.pod.metadata?.name}: ${err.message}`);
        if (!statusWritten) handlers.status(failureStatus(err));
      })
      .finally(finish);
  };
}
