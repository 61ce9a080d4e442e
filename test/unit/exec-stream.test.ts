import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExecStreamError, exitCodeFromStatus } from '../../src/core/exec/stream.js';

test("the v4 error channel's status: Success is 0, NonZeroExitCode carries the code, anything else is an error", () => {
  assert.equal(exitCodeFromStatus('{"metadata":{},"status":"Success"}'), 0);
  const three =
    '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}';
  assert.equal(exitCodeFromStatus(three), 3);
  assert.throws(() => exitCodeFromStatus('{"status":"Failure","message":"container not running"}'), (e: Error) => e instanceof ExecStreamError && e.message === 'container not running');
  assert.throws(() => exitCodeFromStatus('plain text from an old protocol'), /plain text from an old protocol/);
});
