import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closestCommand } from '../../src/hooks/command-not-found.js';
import { podctl } from '../support/e2e.js';

const IDS = ['get:pods', 'get:containers', 'get:images', 'plan', 'sync-once', 'run', 'runtime:up', 'logs'];

test('closestCommand: compares as many words as the command has; nothing when nothing is close', () => {
  assert.equal(closestCommand('gett:pods', IDS), 'get:pods');
  assert.equal(closestCommand('get:podz:web', IDS), 'get:pods');
  assert.equal(closestCommand('plna:x.yaml', IDS), 'plan');
  assert.equal(closestCommand('sync-onec', IDS), 'sync-once');
  assert.equal(closestCommand('runtime:upp', IDS), 'runtime:up');
  assert.equal(closestCommand('frobnicate', IDS), undefined);
  assert.equal(closestCommand('x', []), undefined);
  // A name where a word of the command belongs is not a typo of it.
  assert.equal(closestCommand('get:rd', [...IDS, 'get:pod', 'get:po']), undefined);
  assert.equal(closestCommand('get:pdos', IDS), 'get:pods');
});

test("a wrong word after a topic names the topic's commands, never a command of another topic; kubectl's `get pod` and `get po` work", () => {
  const r = podctl(['get', 'rd']);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    'podctl: "get rd" is not a podctl command.\n"podctl get" takes one of: containers, images, pods.\nRun "podctl help" for the list of commands.\n',
  );
  const typo = podctl(['get', 'contaners']);
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /Did you mean "podctl get containers"\?/);
  for (const words of [
    ['get', 'pod', 'no-such-pod'],
    ['get', 'po', 'no-such-pod'],
  ]) {
    const alias = podctl([...words, '--root-dir', 'does-not-exist-podctl-test']);
    assert.doesNotMatch(alias.stderr, /is not a podctl command/, words.join(' '));
  }
});

test('a mistyped command is a usage error: exit 2, the suggestion with the rest of the line, off a terminal too', () => {
  const r = podctl(['gett', 'pods', '-A']);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    'podctl: "gett pods" is not a podctl command.\nDid you mean "podctl get pods -A"?\nRun "podctl help" for the list of commands.\n',
  );
  // The hook loads only when oclif runs it (package.json's oclif.hooks), not with the CLI.
  assert.match(
    podctl(['plna', 'examples/hello.yaml']).stderr,
    /^podctl: "plna" is not a podctl command\.\nDid you mean "podctl plan examples\/hello\.yaml"\?\n/,
  );
  const none = podctl(['frobnicate']);
  assert.equal(none.code, 2);
  assert.equal(none.stderr, 'podctl: "frobnicate" is not a podctl command.\nRun "podctl help" for the list of commands.\n');
});

test('names echoed in errors cannot drive the terminal: control characters are shown escaped', async () => {
  const { escapeControls, quoteName } = await import('../../src/core/errors.js');
  assert.equal(quoteName('a\nb\u001b[31m'), '"a\\nb\\u001b[31m"');
  assert.equal(escapeControls('line one\nname \u001b[31mred\u0007 \u009b'), 'line one\nname \\x1b[31mred\\x07 \\x9b');
});

test('delete with a bare name is a usage error whose hint is the command that deletes that pod', () => {
  const r = podctl(['delete', 'rd', '--root-dir', 'does-not-exist-podctl-test']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /"rd": expected pod NAME… or pod\/NAME \(podctl deletes pods only\); to delete the pod rd: podctl delete pod rd/);
  const kind = podctl(['delete', 'deployment', 'web', '--root-dir', 'does-not-exist-podctl-test']);
  assert.equal(kind.code, 2);
  assert.doesNotMatch(kind.stderr, /to delete the pod/);
});
