import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WebSocketServer } from 'ws';
import { Channel, EXEC_PROTOCOL, ExecStreamError, exitCodeFromStatus, streamExec } from '../../src/core/exec/stream.js';

test("the v4 error channel's status: Success is 0, NonZeroExitCode carries the code, anything else is an error", () => {
  assert.equal(exitCodeFromStatus('{"metadata":{},"status":"Success"}'), 0);
  const three =
    '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}';
  assert.equal(exitCodeFromStatus(three), 3);
  assert.throws(
    () => exitCodeFromStatus('{"status":"Failure","message":"container not running"}'),
    (e: Error) => e instanceof ExecStreamError && e.message === 'container not running',
  );
  assert.throws(() => exitCodeFromStatus('plain text from an old protocol'), /plain text from an old protocol/);
});

test(
  'stdin as reused frames: each is sent with its channel byte before the next is asked for, so one buffer can ' + 'carry them all',
  async () => {
    const got: Buffer[] = [];
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => (p.has(EXEC_PROTOCOL) ? EXEC_PROTOCOL : false) });
    await once(wss, 'listening');
    wss.on('connection', (ws) => {
      ws.on('message', (data: Buffer) => {
        got.push(Buffer.from(data));
        if (got.length === 10)
          ws.send(Buffer.concat([Buffer.from([Channel.Error]), Buffer.from('{"metadata":{},"status":"Success"}')]), () => ws.close());
      });
    });
    async function* frames(): AsyncGenerator<Buffer, void, undefined> {
      const frame = Buffer.alloc(1 + 1000);
      for (let i = 1; i <= 10; i++) yield frame.fill(i, 1);
    }
    try {
      const { port } = wss.address() as AddressInfo;
      const sink = new Writable({ write: (_c, _e, cb) => cb() });
      assert.equal(await streamExec(`ws://127.0.0.1:${port}/exec/x`, { stdinFrames: frames(), stdout: sink }), 0);
      assert.equal(got.length, 10);
      got.forEach((m, i) => {
        assert.equal(m[0], Channel.Stdin);
        assert.ok(m.subarray(1).equals(Buffer.alloc(1000, i + 1)), `frame ${i + 1} as it was when it was sent`);
      });
    } finally {
      wss.close();
    }
  },
);
