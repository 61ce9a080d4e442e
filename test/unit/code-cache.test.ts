import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { pathToFileURL } from 'node:url';
import { CodeCacheLoader, cacheFileOf, childPath } from '../../src/cli/code-cache.js';

/** A directory of CommonJS files: a.cjs requires its chunk (and a built-in), the chunk requires a.cjs back (a cycle). */
function fixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-code-cache-'));
  mkdirSync(join(dir, 'chunks'));
  writeFileSync(join(dir, 'a.cjs'), "exports.early = 1;\nconst b = require('./chunks/b.cjs');\nconst { basename } = require('node:path');\nexports.run = (x) => b.double(x) + basename('/x/y');\nexports.loadLater = () => Promise.resolve().then(() => require('./chunks/later.cjs'));\n");
  writeFileSync(join(dir, 'chunks', 'b.cjs'), "const a = require('../a.cjs');\nexports.seenEarly = a.early;\nexports.double = (x) => x * 2;\n");
  writeFileSync(join(dir, 'chunks', 'later.cjs'), 'exports.value = 42;\n');
  return dir;
}

test('CodeCacheLoader loads CommonJS files as require() would, the directory\'s own requires through itself', async () => {
  const dir = fixture();
  try {
    const loader = new CodeCacheLoader(dir);
    const a = loader.require(join(dir, 'a.cjs')) as { run: (x: number) => string; loadLater: () => Promise<{ value: number }> };
    assert.equal(a.run(21), '42y');
    assert.equal((await a.loadLater()).value, 42);
    // The cycle saw a.cjs's exports so far, as with require().
    assert.equal((loader.require(join(dir, 'chunks', 'b.cjs')) as { seenEarly: number }).seenEarly, 1);
    assert.deepEqual([...loader.loaded.keys()], [join(dir, 'a.cjs'), join(dir, 'chunks', 'b.cjs'), join(dir, 'chunks', 'later.cjs')]);
    assert.ok([...loader.loaded.values()].every((l) => l.cache === 'none'));
    // Node's require() of the same file gets the same module.
    assert.equal(createRequire(join(dir, 'x.cjs'))('./a.cjs'), a);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Loads a.cjs in a process of its own (V8 also keeps what it compiled in memory, by source, for the
 * life of a process): what run(2) gives and how each file's cache fared.
 */
function loadElsewhere(dir: string): { result: string; caches: string[] } {
  const loaderUrl = pathToFileURL(join(import.meta.dirname, '../../src/cli/code-cache.js')).href;
  const script = `import { CodeCacheLoader } from ${JSON.stringify(loaderUrl)};
const l = new CodeCacheLoader(${JSON.stringify(dir)});
const result = l.require(${JSON.stringify(join(dir, 'a.cjs'))}).run(2);
console.log(JSON.stringify({ result, caches: [...l.loaded.values()].map((f) => f.cache) }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { result: string; caches: string[] };
}

test('CodeCacheLoader writes a code cache for every file and loads them with it; a cache V8 rejects is compiled from the text', () => {
  const dir = fixture();
  try {
    const first = new CodeCacheLoader(dir);
    (first.require(join(dir, 'a.cjs')) as { run: (x: number) => string }).run(1);
    assert.ok(first.writeCaches() > 0);
    // later.cjs was never loaded: its cache is of its top level.
    for (const f of ['a.cjs', 'chunks/b.cjs', 'chunks/later.cjs']) assert.ok(existsSync(cacheFileOf(join(dir, f))), f);

    assert.deepEqual(loadElsewhere(dir), { result: '4y', caches: ['used', 'used'] });

    // A cache that is not V8's for this file: rejected, and the file runs as without one.
    writeFileSync(cacheFileOf(join(dir, 'a.cjs')), Buffer.from('not a code cache'));
    writeFileSync(join(dir, 'chunks', 'b.cjs'), "exports.double = (x) => x * 3; // changed since its cache was written\n");
    assert.deepEqual(loadElsewhere(dir), { result: '6y', caches: ['rejected', 'rejected'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('CodeCacheLoader: a file that throws is not kept as loaded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-code-cache-'));
  try {
    writeFileSync(join(dir, 'bad.cjs'), "throw new Error('broken at load');\n");
    const loader = new CodeCacheLoader(dir);
    assert.throws(() => loader.require(join(dir, 'bad.cjs')), /broken at load/);
    assert.equal(loader.loaded.size, 0);
    assert.throws(() => loader.require(join(dir, 'bad.cjs')), /broken at load/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('childPath joins a plain ./ spec below a directory exactly as path.resolve does, and leaves every other spec to it', () => {
  const segment = fc.oneof(fc.constantFrom('.', '..', '', 'chunks', 'a.cjs', 'chunk-X1.cjs', '...', '.hidden'), fc.stringMatching(/^[a-z0-9._-]{1,8}$/));
  const dir = fc.array(fc.stringMatching(/^[a-z0-9._-]{1,8}$/).filter((s) => s !== '.' && s !== '..'), { maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
  const spec = fc.tuple(fc.constantFrom('./', '../', '/', '', './/'), fc.array(segment, { minLength: 1, maxLength: 4 })).map(([head, parts]) => head + parts.join('/'));
  fc.assert(
    fc.property(dir, spec, (d, s) => {
      const joined = childPath(d, s);
      if (joined !== undefined) assert.equal(joined, resolve(d, s));
      return true;
    }),
    { numRuns: 3000 },
  );
  // The specs the chunks use are joined here; anything with . or .. or an empty segment is not.
  assert.equal(childPath('/opt/podctl/dist/cli', './chunks/chunk-AB12.cjs'), '/opt/podctl/dist/cli/chunks/chunk-AB12.cjs');
  assert.equal(childPath('/', './a.cjs'), '/a.cjs');
  for (const s of ['../a.cjs', './../a.cjs', './x/../a.cjs', './x/./a.cjs', './/a.cjs', './x/', 'a.cjs', '/a.cjs', '.']) assert.equal(childPath('/d', s), undefined, s);
});

test('CodeCacheLoader reads a root file and the files it loads from their pack, runs each when first required, and caches the pack', async () => {
  const dir = fixture();
  try {
    // The pack of a.cjs holds a.cjs and its chunk b.cjs, as the build writes one (scripts/bundle.mjs); later.cjs stays a file.
    mkdirSync(join(dir, 'packs'));
    const fn = (file: string) => `function (exports, require, module, __filename, __dirname) {${readFileSync(join(dir, file), 'utf8')}\n}`;
    writeFileSync(join(dir, 'packs', 'a.pack.js'), `({\n"a.cjs": ${fn('a.cjs')},\n"chunks/b.cjs": ${fn('chunks/b.cjs')},\n"chunks/unused.cjs": function () { throw new Error('never required, never run'); }\n})`);
    writeFileSync(join(dir, 'packs.json'), JSON.stringify({ packs: { 'a.cjs': 'packs/a.pack.js' } }));
    // What the pack holds is what runs: the files themselves are not read.
    writeFileSync(join(dir, 'a.cjs'), "throw new Error('read from the file, not the pack');\n");
    writeFileSync(join(dir, 'chunks', 'b.cjs'), "throw new Error('read from the file, not the pack');\n");
    const loader = new CodeCacheLoader(dir);
    const a = loader.require(join(dir, 'a.cjs')) as { run: (x: number) => string; loadLater: () => Promise<{ value: number }> };
    assert.equal(a.run(21), '42y');
    const pack = join(dir, 'packs', 'a.pack.js');
    assert.equal(loader.loaded.get(join(dir, 'a.cjs'))?.pack, pack);
    assert.equal(loader.loaded.get(join(dir, 'chunks', 'b.cjs'))?.pack, pack);
    // The cycle through the pack saw a.cjs's exports so far, as with require().
    assert.equal((loader.require(join(dir, 'chunks', 'b.cjs')) as { seenEarly: number }).seenEarly, 1);
    assert.equal((await a.loadLater()).value, 42);
    assert.equal(loader.loaded.get(join(dir, 'chunks', 'later.cjs'))?.pack, undefined);
    assert.deepEqual([...loader.packs.keys()], [pack]);
    loader.writeCaches();
    assert.ok(existsSync(cacheFileOf(pack)));
    // Another process takes the pack's cache.
    assert.deepEqual(loadElsewhere(dir), { result: '4y', caches: ['used', 'used'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
