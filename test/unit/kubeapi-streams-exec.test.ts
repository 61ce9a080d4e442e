import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { dialSpdy, openSpdyStream, type SpdyStream } from '../../src/core/exec/spdy.js';
import { handlePodUpgrade } from '../../src/core/kubeapi/streams/index.js';
import { acceptSpdy, REMOTECOMMAND_SPDY_PROTOCOLS } from '../../src/core/kubeapi/streams/spdy.js';

/**
 * A stand-in for containerd's streaming server over SPDY v4: it waits for the streams the request
 * named (as the kubelet's server does), then runs one of a few scripted commands.
 */
function fakeRuntime(): Server {
  const server = createServer();
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url!, 'http://x');
    const accepted = acceptSpdy(req, socket, head, ['v4.channel.k8s.io']);
    if (!accepted) return;
    const tty = url.searchParams.get('tty') === 'true';
    const want = [
      'error',
      'stdout',
      ...(url.searchParams.get('stdin') === 'true' ? ['stdin'] : []),
      ...(tty ? ['resize'] : []),
      ...(url.searchParams.get('stderr') === 'true' ? ['stderr'] : []),
    ];
    const streams = new Map<string, SpdyStream>();
    accepted.session.on('stream', (s: SpdyStream) => {
      s.on('error', () => undefined);
      s.respond(200, {});
      streams.set(String(s.headers.streamtype), s);
      if (want.every((w) => streams.has(w))) run(url.pathname.split('/').pop()!, streams, () => socket.destroy());
    });
  });
  return server;
}

function run(command: string, streams: Map<string, SpdyStream>, close: () => void) {
  const out = streams.get('stdout')!;
  const finish = (status: object) => {
    streams.get('error')!.end(JSON.stringify(status), () => setTimeout(close, 20));
    out.end();
    streams.get('stderr')?.end();
  };
  if (command === 'cat') {
    const stdin = streams.get('stdin')!;
    stdin.on('data', (d: Buffer) => out.write(d));
    stdin.on('end', () => finish({ metadata: {}, status: 'Success' }));
  } else if (command === 'exit3') {
    out.write('out\n');
    streams.get('stderr')!.write('err\n');
    finish({
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  } else if (command === 'tty') {
    let text = '';
    streams.get('resize')!.on('data', (d: Buffer) => {
      text += d.toString();
      // Sizes come as one JSON object after another.
      for (let end = text.indexOf('}'); end >= 0; end = text.indexOf('}')) {
        const { Width, Height } = JSON.parse(text.slice(0, end + 1)) as { Width: number; Height: number };
        text = text.slice(end + 1);
        out.write(`size ${Width} ${Height}\n`);
      }
    });
    streams.get('stdin')!.on('data', (d: Buffer) => d.includes('q') && finish({ metadata: {}, status: 'Success' }));
  }
}

let runtime: Server;
let kube: Server;
let base: string;
const execCalls: unknown[] = [];

function pod(overrides: Partial<IPod> = {}, running = true): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'app',
          ready: running,
          restartCount: 0,
          image: 'busybox',
          imageID: '',
          containerID: 'containerd://abc',
          state: running ? { running: { startedAt: '2026-01-01T00:00:00Z' } } : { terminated: { exitCode: 0 } },
        },
      ],
    },
    ...overrides,
  } as IPod;
}

let currentPod = pod();

before(async () => {
  runtime = fakeRuntime().listen(0, '127.0.0.1');
  await once(runtime, 'listening');
  const runtimeBase = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
  const cri = {
    exec: async (r: { cmd: string[]; stdin: boolean; stderr: boolean; tty: boolean; containerId: string }) => {
      execCalls.push(r);
      return { url: `${runtimeBase}/exec/${r.cmd[0]}?stdin=${r.stdin}&stderr=${r.stderr}&tty=${r.tty}` };
    },
    attach: async (r: { stdin: boolean; stderr: boolean; tty: boolean }) =>
      `${runtimeBase}/attach/tty?stdin=${r.stdin}&stderr=${r.stderr}&tty=${r.tty}`,
  } as unknown as CriClient;
  kube = createServer((_req, res) => res.writeHead(404).end());
  kube.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url!, 'http://x');
    const kind = url.pathname.split('/').pop() as 'exec' | 'attach';
    handlePodUpgrade(kind, req, socket, head, url, { pod: currentPod, cri });
  });
  kube.listen(0, '127.0.0.1');
  await once(kube, 'listening');
  base = `127.0.0.1:${(kube.address() as AddressInfo).port}/api/v1/namespaces/default/pods/web`;
});

after(() => {
  runtime.close();
  kube.close();
});

interface WsResult {
  frames: Buffer[];
  closeCode: number;
  protocol: string;
}

/** A kubectl-like WebSocket client: sends each message once the previous condition on what arrived holds. */
function wsExec(path: string, protocols: string[], script: { when: (got: Buffer[]) => boolean; send: Buffer }[]): Promise<WsResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${base}/${path}`, protocols);
    const frames: Buffer[] = [];
    const step = () => {
      while (script.length && script[0]!.when(frames)) ws.send(script.shift()!.send);
    };
    ws.on('open', step);
    ws.on('message', (d: Buffer) => {
      frames.push(d);
      step();
    });
    ws.on('error', reject);
    ws.on('close', (code) => resolve({ frames, closeCode: code, protocol: ws.protocol }));
  });
}

const channelText = (frames: Buffer[], ch: number) =>
  frames
    .filter((f) => f[0] === ch)
    .map((f) => f.subarray(1).toString())
    .join('');
const frame = (ch: number, body: string | number[]) => Buffer.concat([Buffer.from([ch]), Buffer.from(body as string)]);
const always = () => true;

describe('exec over WebSocket', () => {
  test('v5: stdin is echoed, [255, 0] closes it, and the Success status ends the stream', async () => {
    const r = await wsExec(
      'exec?command=cat&stdin=true&stdout=true&stderr=true',
      ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
      [
        { when: always, send: frame(0, 'hello\n') },
        { when: (got) => channelText(got, 1) === 'hello\n', send: Buffer.from([255, 0]) },
      ],
    );
    assert.equal(r.protocol, 'v5.channel.k8s.io');
    assert.equal(channelText(r.frames, 1), 'hello\n');
    assert.deepEqual(JSON.parse(channelText(r.frames, 3)), { metadata: {}, status: 'Success' });
    assert.equal(r.closeCode, 1000);
  });

  test('v4: stdout and stderr on their channels, exit code 3 in the status', async () => {
    const r = await wsExec('exec?command=exit3&stdout=true&stderr=true', ['v4.channel.k8s.io'], []);
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.equal(channelText(r.frames, 1), 'out\n');
    assert.equal(channelText(r.frames, 2), 'err\n');
    const status = JSON.parse(channelText(r.frames, 3)) as { reason: string; details: { causes: { reason: string; message: string }[] } };
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  });

  test('tty: each resize on channel 4 reaches the runtime', async () => {
    const r = await wsExec(
      'exec?command=tty&stdin=true&stdout=true&tty=true',
      ['v5.channel.k8s.io'],
      [
        { when: always, send: frame(4, JSON.stringify({ Width: 80, Height: 24 })) },
        { when: (got) => channelText(got, 1).includes('size 80 24'), send: frame(4, JSON.stringify({ Width: 120, Height: 40 })) },
        { when: (got) => channelText(got, 1).includes('size 120 40'), send: frame(0, 'q') },
      ],
    );
    assert.match(channelText(r.frames, 1), /size 80 24\n(.|\n)*size 120 40\n/);
    assert.equal(JSON.parse(channelText(r.frames, 3)).status, 'Success');
  });

  test('attach is bridged the same way', async () => {
    const r = await wsExec(
      'attach?stdin=true&stdout=true&tty=true',
      ['v5.channel.k8s.io'],
      [
        { when: always, send: frame(4, JSON.stringify({ Width: 10, Height: 5 })) },
        { when: (got) => channelText(got, 1).includes('size 10 5'), send: frame(0, 'q') },
      ],
    );
    assert.match(channelText(r.frames, 1), /size 10 5/);
  });
});

/** A kubectl ≤1.29-like SPDY client: the streams in kubectl's order, stdin written then half-closed. */
async function spdyExec(path: string, protocols: string[], opts: { stdin?: string; stderr?: boolean }) {
  const { session, protocol } = await dialSpdy(`http://${base}/${path}`, protocols);
  const error = await openSpdyStream(session, { streamType: 'error' });
  const stdin = opts.stdin !== undefined ? await openSpdyStream(session, { streamType: 'stdin' }) : undefined;
  const stdout = await openSpdyStream(session, { streamType: 'stdout' });
  const stderr = opts.stderr ? await openSpdyStream(session, { streamType: 'stderr' }) : undefined;
  const read = (s: SpdyStream | undefined) =>
    new Promise<string>((resolve) => {
      if (!s) return resolve('');
      let text = '';
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.once('end', () => resolve(text)).once('close', () => resolve(text));
    });
  const texts = Promise.all([read(error), read(stdout), read(stderr)]);
  if (stdin) stdin.end(opts.stdin);
  const [errorText, out, err] = await texts;
  session.socket.destroy();
  return { protocol, errorText, out, err };
}

describe('exec over SPDY/3.1', () => {
  test('v4: stdin to its end (the stdin stream half-closed), then the Success status', async () => {
    const r = await spdyExec('exec?command=cat&stdin=true&stdout=true', ['v4.channel.k8s.io', 'v3.channel.k8s.io'], { stdin: 'abc\n' });
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.equal(r.out, 'abc\n');
    assert.deepEqual(JSON.parse(r.errorText), { metadata: {}, status: 'Success' });
  });

  test('v4: exit code 3 in the status on the error stream', async () => {
    const r = await spdyExec('exec?command=exit3&stdout=true&stderr=true', ['v4.channel.k8s.io'], { stderr: true });
    assert.equal(r.out, 'out\n');
    assert.equal(r.err, 'err\n');
    assert.deepEqual(JSON.parse(r.errorText).details.causes, [{ reason: 'ExitCode', message: '3' }]);
  });

  test('v2: the error stream carries the message as text', async () => {
    const r = await spdyExec('exec?command=exit3&stdout=true&stderr=true', ['v2.channel.k8s.io'], { stderr: true });
    assert.equal(r.protocol, 'v2.channel.k8s.io');
    assert.equal(r.errorText, 'command terminated with non-zero exit code: exit code 3');
  });
});

/** The raw HTTP answer to an upgrade that is refused. */
function refused(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`http://${base}/${path}`, { method: 'POST', headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', ...headers } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}

describe('refused before any upgrade', () => {
  const v4 = { 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' };

  test('a container that is not running: 400, and the runtime is never asked', async () => {
    currentPod = pod({}, false);
    const before = execCalls.length;
    try {
      const r = await refused('exec?command=true&stdout=true', v4);
      assert.equal(r.status, 400);
      assert.equal(JSON.parse(r.body).message, 'container not found ("app")');
      assert.equal(execCalls.length, before);
    } finally {
      currentPod = pod();
    }
  });

  test('several containers and none named: the API server message', async () => {
    const p = pod();
    p.spec!.containers.push({ name: 'side', image: 'busybox' });
    currentPod = p;
    try {
      const r = await refused('exec?command=true&stdout=true', v4);
      assert.equal(r.status, 400);
      assert.equal(JSON.parse(r.body).message, 'a container name must be specified for pod web, choose one of: [app side]');
      const named = await refused('exec?command=true&stdout=true&container=nope', v4);
      assert.equal(JSON.parse(named.body).message, 'container nope is not valid for pod web');
    } finally {
      currentPod = pod();
    }
  });

  test('no command, no stream, no common protocol', async () => {
    assert.equal(
      JSON.parse((await refused('exec?stdout=true', v4)).body).message,
      'you must specify at least one command for the container',
    );
    assert.equal(JSON.parse((await refused('exec?command=true', v4)).body).message, 'you must specify at least 1 of stdin, stdout, stderr');
    const r = await refused('exec?command=true&stdout=true', { 'X-Stream-Protocol-Version': 'v9.channel.k8s.io' });
    assert.equal(r.status, 403);
    assert.match(r.body, /unable to negotiate protocol: client supports \[v9.channel.k8s.io\], server accepts \[v4.channel.k8s.io/);
  });

  test('the SPDY protocols served are the kubelet list', () => {
    assert.deepEqual(REMOTECOMMAND_SPDY_PROTOCOLS, ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);
  });
});
