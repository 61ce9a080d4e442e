import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { Module, createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { Script } from 'node:vm';

/** How a file's V8 code cache fared: used, rejected by V8 (another Node, other V8 flags, the file changed), or there was none. */
export type CodeCacheState = 'used' | 'rejected' | 'none';

/** The code cache of a file: beside it, with `.cache` added to its name. */
export const cacheFileOf = (file: string): string => `${file}.cache`;

type Wrapper = (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;

/**
 * Loads the CommonJS files (`.cjs`) of one directory, as require() would, each compiled with the
 * V8 code cache beside it when there is one: V8 then deserializes the file's compiled functions
 * instead of parsing it, which Node 20 does for no module it loads itself (module.enableCompileCache
 * is Node 22). A cache V8 rejects (another Node, other V8 flags, a file changed since) is ignored
 * and the file is compiled from its text, as with no cache. A file of the directory that requires
 * another one (by a relative or absolute path) gets it from this loader, with its cache; anything
 * else is Node's require(). Each module also goes into require's cache, so that a require() of the
 * same file from elsewhere gets the same exports.
 */
export class CodeCacheLoader {
  readonly dir: string;
  /**
   * Every file loaded, in order, with how its cache fared, and the script it was compiled in: its own,
   * or the pack's it came in (`pack`, see loadPack).
   */
  readonly loaded = new Map<string, { script: Script; cache: CodeCacheState; module: Module; pack?: string }>();
  /** Each pack loaded: its script and how its cache fared. */
  readonly packs = new Map<string, { script: Script; cache: CodeCacheState }>();
  /** Files whose function a loaded pack holds, not yet run: the pack they came in. */
  private readonly packed = new Map<string, { wrapper: Wrapper; pack: string }>();
  /** The pack of each root file (PACK_INDEX, read when first needed), relative to the directory. */
  private packIndex?: Record<string, string>;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /** Whether the loader loads this file itself: a `.cjs` file in its directory or below. */
  owns(file: string): boolean {
    return file.startsWith(this.dir + sep) && file.endsWith('.cjs');
  }

  require(file: string): Record<string, unknown> {
    const known = this.loaded.get(file);
    if (known) return known.module.exports as Record<string, unknown>;
    if (!this.packed.has(file)) this.loadPack(file);
    const fromPack = this.packed.get(file);
    let entry: { script: Script; cache: CodeCacheState; wrapper: () => Wrapper; pack?: string };
    if (fromPack) {
      this.packed.delete(file);
      const pack = this.packs.get(fromPack.pack)!;
      entry = { script: pack.script, cache: pack.cache, wrapper: () => fromPack.wrapper, pack: fromPack.pack };
    } else {
      const { script, cache } = compile(wrap(readFileSync(file, 'utf8')), file);
      entry = { script, cache, wrapper: () => script.runInThisContext() as Wrapper };
    }
    const mod = new Module(file);
    mod.filename = file;
    const req = this.requireFor(file);
    // Before it runs, as Node does, so that a cycle gets the exports so far.
    this.loaded.set(file, { script: entry.script, cache: entry.cache, module: mod, ...(entry.pack ? { pack: entry.pack } : {}) });
    req.cache[file] = mod;
    try {
      entry.wrapper().call(mod.exports, mod.exports, req, mod, file, dirname(file));
    } catch (err) {
      this.loaded.delete(file);
      delete req.cache[file];
      throw err;
    }
    mod.loaded = true;
    return mod.exports as Record<string, unknown>;
  }

  /**
   * Reads the pack of a root file, if it has one: the root and the small files it loads at once, each
   * as its CommonJS wrapper function, in one file compiled as one script with one code cache. Each
   * function runs when its file is first required, as the file would have run: a pack saves reading,
   * and checking the cache of, some twenty files of a few KB each (about 0.1 ms a file).
   */
  private loadPack(file: string): void {
    if (!this.packIndex) {
      try {
        this.packIndex = (JSON.parse(readFileSync(this.dir + sep + PACK_INDEX, 'utf8')) as { packs: Record<string, string> }).packs;
      } catch {
        // No packs (a directory the build did not pack): every file is read on its own.
        this.packIndex = {};
      }
    }
    // Paths by concatenation, not path.join: see childPath.
    const rel = this.relative(file);
    const pack = rel === undefined ? undefined : this.packIndex[rel];
    if (pack === undefined) return;
    const packFile = this.absolute(pack);
    if (this.packs.has(packFile)) return;
    const { script, cache } = compile(readFileSync(packFile, 'utf8'), packFile);
    this.packs.set(packFile, { script, cache });
    for (const [name, wrapper] of Object.entries(script.runInThisContext() as Record<string, Wrapper>)) {
      const f = this.absolute(name);
      if (!this.loaded.has(f) && !this.packed.has(f)) this.packed.set(f, { wrapper, pack: packFile });
    }
  }

  /** A file of the directory by its path relative to it, with `/` between names (as in the pack index and the packs). */
  private absolute(rel: string): string {
    return this.dir + sep + (sep === '/' ? rel : rel.replaceAll('/', sep));
  }

  private relative(file: string): string | undefined {
    if (!file.startsWith(this.dir + sep)) return undefined;
    const rel = file.slice(this.dir.length + 1);
    return sep === '/' ? rel : rel.replaceAll(sep, '/');
  }

  /** Node's require() per directory: the chunks share one (createRequire builds a file's node_modules paths each time). */
  private readonly nodeRequires = new Map<string, NodeJS.Require>();

  /** The require() a file of the directory is given: this loader's for the directory's files, Node's for the rest. */
  private requireFor(file: string): NodeJS.Require {
    const from = dirname(file);
    let node = this.nodeRequires.get(from);
    if (!node) this.nodeRequires.set(from, (node = createRequire(file)));
    const req = ((spec: string) => {
      if (spec.startsWith('./') || spec.startsWith('../') || isAbsolute(spec)) {
        const target = childPath(from, spec) ?? resolve(from, spec);
        if (this.owns(target)) return this.require(target);
      }
      return node(spec);
    }) as NodeJS.Require;
    return Object.assign(req, { resolve: node.resolve, cache: node.cache, main: node.main, extensions: node.extensions });
  }

  /**
   * Writes the code cache of every `.cjs` file of the directory: for a file loaded, the functions
   * compiled so far (what has run); for the others, the file's top level, compiled here.
   * Returns the bytes written.
   */
  writeCaches(): number {
    let bytes = 0;
    const write = (file: string, script: Script | undefined, source: () => string) => {
      const data = (script ?? new Script(source(), { filename: file })).createCachedData();
      writeFileSync(cacheFileOf(file), data);
      bytes += data.length;
    };
    for (const file of listFiles(this.dir)) {
      const loaded = this.loaded.get(file);
      write(file, loaded && !loaded.pack ? loaded.script : undefined, () => wrap(readFileSync(file, 'utf8')));
    }
    for (const pack of listFiles(this.dir, PACK_SUFFIX)) write(pack, this.packs.get(pack)?.script, () => readFileSync(pack, 'utf8'));
    return bytes;
  }
}

/** The list of packs in the directory (written by the build, scripts/bundle.mjs): `{ packs: { root: pack } }`, relative paths. */
export const PACK_INDEX = 'packs.json';
/** How a pack's name ends: an object of CommonJS wrapper functions by file, relative to the directory. */
export const PACK_SUFFIX = '.pack.js';

/** A script compiled with the code cache beside its file, if there is one. */
function compile(source: string, file: string): { script: Script; cache: CodeCacheState } {
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFileOf(file));
  } catch {
    cachedData = undefined;
  }
  const script = new Script(source, { filename: file, cachedData });
  return { script, cache: cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used' };
}

/**
 * `./a/b` below an absolute, normalized directory, as path.resolve would give it, by concatenation;
 * undefined for any other spec (`..`, `.`, empty segments, absolute). The chunks require one
 * another some 150 times a start, each by `./chunk-….cjs`: path.resolve at each walked every
 * character of the install path, enough for V8 to queue path's normalizeString for optimization
 * on a background thread (which a process waits for at exit) once the checkout path is a few
 * characters longer.
 */
export function childPath(dir: string, spec: string): string | undefined {
  if (!spec.startsWith('./')) return undefined;
  const rest = spec.slice(2);
  for (const segment of rest.split('/')) if (segment === '' || segment === '.' || segment === '..') return undefined;
  return dir.endsWith(sep) ? dir + rest : dir + sep + rest;
}

/** The same wrapper as Node's CommonJS loader: the file's lines keep their numbers. */
const wrap = (source: string): string => `(function (exports, require, module, __filename, __dirname) {${source}\n})`;

function listFiles(dir: string, suffix = '.cjs'): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
