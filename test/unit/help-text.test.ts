import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { prose } from '../../src/cli/prose.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

test('prose: the lines of a paragraph are joined; blank lines part paragraphs; list items keep their lines', () => {
  const n = 3;
  const text = prose`Reads the files and
reports what podctl would refuse (${n} kinds).

Holds:
- manifest.yaml: the pod
  and its spec
- one item
- another   
Exit 0 when fine.`;
  assert.equal(
    text,
    'Reads the files and reports what podctl would refuse (3 kinds).\n\n' +
      'Holds:\n- manifest.yaml: the pod and its spec\n- one item\n- another Exit 0 when fine.',
  );
});

test("every command's description is written as paragraphs, so that --help wraps it to the terminal, not where the source broke it", () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, { description?: string }>;
  };
  const broken: string[] = [];
  for (const [id, command] of Object.entries(manifest.commands)) {
    const lines = (command.description ?? '').split('\n');
    lines.forEach((line, i) => {
      const next = lines[i + 1];
      if (line.trim() && next?.trim() && !/^- /.test(next)) broken.push(`${id}: "${line.slice(-30)}" / "${next.slice(0, 30)}"`);
    });
  }
  assert.deepEqual(broken, []);

  // At 80 columns (OCLIF_COLUMNS, which oclif reads before the terminal's width), each paragraph of run's description
  // fills its lines.
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'run.js'), 'run', '--help'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', OCLIF_COLUMNS: '80' },
  });
  assert.equal(r.status, 0, r.stderr);
  const description = /\nDESCRIPTION\n([\s\S]*?)\n\n[A-Z ]+\n/.exec(r.stdout)?.[1] ?? '';
  const paragraphs = description.split('\n\n').map((p) => p.split('\n'));
  assert.ok(paragraphs.length >= 4, description);
  for (const lines of paragraphs) {
    for (const line of lines.slice(0, -1)) assert.ok(line.length > 60, `a short line inside a paragraph: "${line}"`);
    for (const line of lines) assert.ok(line.length <= 80, `wider than 80 columns: "${line}"`);
  }
});
