import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

test('a command that finds no agent socket is told so without loading http or connecting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-agent-client-'));
  try {
    const client = pathToFileURL(join(import.meta.dirname, '../../src/core/node/client.js')).href;
    const script = `
      const { AgentClient } = await import(${JSON.stringify(client)});
      const agent = new AgentClient(${JSON.stringify(dir)});
      const running = await agent.running();
      const err = await agent.info().then(() => undefined, (e) => e);
      const http = process.moduleLoadList.some((m) => m === 'NativeModule http' || m === 'NativeModule _http_client');
      console.log(JSON.stringify({ running, code: err?.code, message: err?.message, http }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as {
      running: boolean;
      code?: string;
      message?: string;
      http: boolean;
    };
    assert.equal(out.running, false);
    assert.equal(out.code, 'ENOENT');
    assert.equal(out.message, `connect ENOENT ${join(dir, 'podctl.sock')}`);
    assert.equal(out.http, false, 'node:http is not loaded');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
