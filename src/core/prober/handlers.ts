import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import type { IContainer, IHTTPGetAction, IProbe } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import { GrpcStatus, isCriError } from '../cri/errors.js';
import { loadGrpc } from '../cri/grpc-lazy.js';
import healthPb from '../../generated/cri/health-pb.js';
import { errorMessage } from '../errors.js';

/** What one run of a handler says (the kubelet's probe.Result; Warning counts as success). */
export type HandlerResult = 'success' | 'warning' | 'failure';

export interface HandlerOutcome {
  result: HandlerResult;
  /** The handler's output or the reason it failed, for events and messages. */
  output: string;
}

/** The actions a probe or a lifecycle hook can name. */
export type Handler = Pick<IProbe, 'exec' | 'httpGet' | 'tcpSocket' | 'grpc'> & { sleep?: { seconds: number } };

export interface HandlerContext {
  runtime: RuntimeService;
  clock: Clock;
  containerId: string;
  container: IContainer;
  /** The address httpGet, tcpSocket and grpc reach when the handler names no host: the pod IP. */
  podIP?: string;
  timeoutSeconds: number;
}

/** kubelet's probe User-Agent is "kube-probe/<major>.<minor>"; podctl names itself. */
const USER_AGENT = 'podctl-probe/0.1';
/** The kubelet reads at most 10 KiB of an HTTP probe's body. */
const MAX_BODY_BYTES = 10 * 1024;
const MAX_REDIRECTS = 10;

/** Runs one exec, httpGet, tcpSocket, grpc or sleep action with the kubelet's success rules. */
export async function runHandler(handler: Handler, ctx: HandlerContext): Promise<HandlerOutcome> {
  if (handler.exec) return runExec(handler.exec.command ?? [], ctx);
  if (handler.httpGet) return runHttpGet(handler.httpGet, ctx);
  if (handler.tcpSocket) {
    const host = handler.tcpSocket.host || ctx.podIP;
    return runTcp(host, resolvePort(handler.tcpSocket.port, ctx.container), ctx.timeoutSeconds);
  }
  if (handler.grpc) return runGrpc(ctx.podIP, handler.grpc.port, handler.grpc.service ?? '', ctx.timeoutSeconds);
  if (handler.sleep) {
    await new Promise<void>((resolve) => ctx.clock.setTimeout(resolve, handler.sleep!.seconds * 1000));
    return { result: 'success', output: '' };
  }
  return { result: 'failure', output: 'missing probe handler' };
}

async function runExec(command: string[], ctx: HandlerContext): Promise<HandlerOutcome> {
  try {
    const res = await ctx.runtime.execSync(ctx.containerId, command, ctx.timeoutSeconds);
    const output = `${Buffer.from(res.stdout ?? []).toString()}${Buffer.from(res.stderr ?? []).toString()}`;
    if (res.exitCode === 0) return { result: 'success', output };
    return { result: 'failure', output: output.trim() || `command ${JSON.stringify(command)} exited with ${res.exitCode}` };
  } catch (err) {
    // A runtime-side timeout is a failed probe, as the kubelet's ExecProbeTimeout makes it.
    if (isCriError(err, GrpcStatus.DEADLINE_EXCEEDED) || /timeout|deadline exceeded/i.test(errorMessage(err))) {
      return { result: 'failure', output: `command ${JSON.stringify(command)} timed out` };
    }
    throw err;
  }
}

/** A port by number or by the name of one of the container's ports. */
export function resolvePort(port: number | string | undefined, container: IContainer): number {
  if (typeof port === 'number') return port;
  if (port !== undefined && /^\d+$/.test(port)) return Number(port);
  const named = (container.ports ?? []).find((p) => p.name === port);
  if (!named) throw new Error(`port "${String(port)}" is not a number and no port of container ${container.name} has that name`);
  return named.containerPort;
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

async function runHttpGet(action: IHTTPGetAction, ctx: HandlerContext): Promise<HandlerOutcome> {
  const host = action.host || ctx.podIP;
  if (!host) return { result: 'failure', output: 'the pod has no IP address yet' };
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  const port = resolvePort(action.port, ctx.container);
  let path = action.path ?? '/';
  if (!path.startsWith('/')) path = `/${path}`;
  const headers: Record<string, string> = { 'User-Agent': USER_AGENT, Accept: '*/*' };
  for (const h of action.httpHeaders ?? []) headers[h.name] = h.value;
  let url = new URL(`${scheme}://${hostForUrl(host)}:${port}${path}`);
  const deadline = Date.now() + ctx.timeoutSeconds * 1000;
  for (let hop = 0; ; hop++) {
    let res: { status: number; location?: string; body: string };
    try {
      res = await httpGetOnce(url, headers, Math.max(1, deadline - Date.now()));
    } catch (err) {
      return { result: 'failure', output: `Get "${url.href}": ${errorMessage(err)}` };
    }
    if (res.status >= 300 && res.status < 400 && res.location) {
      const next = new URL(res.location, url);
      // As the kubelet: follow redirects on the same host; a redirect elsewhere ends the probe with a warning.
      if (next.hostname !== url.hostname || hop + 1 >= MAX_REDIRECTS) {
        return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      }
      url = next;
      continue;
    }
    if (res.status >= 200 && res.status < 400) return { result: 'success', output: res.body };
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${res.status}` };
  }
}

function httpGetOnce(
  url: URL,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; location?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const hostHeader = headers.Host ?? headers.host;
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      // The kubelet does not verify a probe's TLS certificate.
      { method: 'GET', headers: { ...headers, ...(hostHeader ? { Host: hostHeader } : {}) }, rejectUnauthorized: false, agent: false },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          if (size < MAX_BODY_BYTES) chunks.push(d.subarray(0, MAX_BODY_BYTES - size));
          size += d.length;
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString() });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(
      () => req.destroy(new Error(`context deadline exceeded (Client.Timeout exceeded while awaiting headers)`)),
      timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

function runTcp(host: string | undefined, port: number, timeoutSeconds: number): Promise<HandlerOutcome> {
  if (!host) return Promise.resolve({ result: 'failure', output: 'the pod has no IP address yet' });
  return new Promise((resolve) => {
    const socket = netConnect({ host, port });
    const done = (outcome: HandlerOutcome) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => done({ result: 'failure', output: `dial tcp ${hostForUrl(host)}:${port}: i/o timeout` }),
      timeoutSeconds * 1000,
    );
    socket.once('connect', () => done({ result: 'success', output: '' }));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done({
        result: 'failure',
        output: `dial tcp ${hostForUrl(host)}:${port}: connect: ${err.code === 'ECONNREFUSED' ? 'connection refused' : err.message}`,
      }),
    );
  });
}

const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** grpc.health.v1's messages, from proto/grpc/health/v1 (protobufjs-cli's static module, generated at build time). */
type HealthMessage = { encode(m: object): { finish(): Uint8Array }; decode(b: Uint8Array): { status?: number; service?: string } };
const { HealthCheckRequest, HealthCheckResponse } = (
  healthPb as unknown as { grpc: { health: { v1: { HealthCheckRequest: HealthMessage; HealthCheckResponse: HealthMessage } } } }
).grpc.health.v1;

/** HealthCheckResponse's status (an empty message is UNKNOWN, 0). */
export function decodeHealthResponse(buf: Buffer): number {
  return HealthCheckResponse.decode(buf).status ?? 0;
}

let healthClient: grpc.ServiceClientConstructor | undefined;

/** The health service's client, made on the first gRPC probe: a pod without one never loads grpc-js for it. */
async function healthClientClass(): Promise<grpc.ServiceClientConstructor> {
  const { makeGenericClientConstructor } = await loadGrpc();
  healthClient ??= makeGenericClientConstructor(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: (service: string) => Buffer.from(HealthCheckRequest.encode({ service }).finish()),
        requestDeserialize: (b: Buffer) => HealthCheckRequest.decode(b).service ?? '',
        responseSerialize: (status: number) => Buffer.from(HealthCheckResponse.encode({ status }).finish()),
        responseDeserialize: (b: Buffer) => HealthCheckResponse.decode(b).status ?? 0,
      },
    },
    'Health',
  );
  return healthClient;
}

async function runGrpc(host: string | undefined, port: number, service: string, timeoutSeconds: number): Promise<HandlerOutcome> {
  if (!host) return { result: 'failure', output: 'the pod has no IP address yet' };
  const target = `${hostForUrl(host)}:${port}`;
  const { credentials } = await loadGrpc();
  const HealthClient = await healthClientClass();
  const client = new HealthClient(target, credentials.createInsecure());
  return new Promise((resolve) => {
    const deadline = Date.now() + timeoutSeconds * 1000;
    (
      client as unknown as {
        Check: (req: string, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: number) => void) => void;
      }
    ).Check(service, { deadline }, (err, res) => {
      client.close();
      if (err) {
        const output =
          err.code === GrpcStatus.DEADLINE_EXCEEDED
            ? `timeout: health rpc did not complete within ${timeoutSeconds}s`
            : err.code === GrpcStatus.UNAVAILABLE
              ? `timeout: failed to connect service "${target}" within ${timeoutSeconds}s: ${err.details}`
              : `error: health rpc probe failed: ${err.details || err.message}`;
        resolve({ result: 'failure', output });
        return;
      }
      const status = SERVING_STATUS[res ?? 0] ?? String(res);
      resolve(
        res === 1 ? { result: 'success', output: '' } : { result: 'failure', output: `service unhealthy (responded with "${status}")` },
      );
    });
  });
}
