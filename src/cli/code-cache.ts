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
  /** Every file loaded, in order, with its compiled script and how its cache fared. */
  readonly loaded = new Map<string, { script: Script; cache: CodeCacheState; module: Module }>();

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
    const source = readFileSync(file, 'utf8');
    let cachedData: Buffer | undefined;
    try {
      cachedData = readFileSync(cacheFileOf(file));
    } catch {
      cachedData = undefined;
    }
    const script = new Script(wrap(source), {
      filename: file,
      cachedData,
    });
    const cache: CodeCacheState = cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
    const mod = new Module(file);
    mod.filename = file;
    const req = this.requireFor(file);
    // Before it runs, as Node does, so that a cycle gets the exports so far.
    this.loaded.set(file, { script, cache, module: mod });
    req.cache[file] = mod;
    try {
      (script.runInThisContext() as Wrapper).call(mod.exports, mod.exports, req, mod, file, dirname(file));
    } catch (err) {
      this.loaded.delete(file);
      delete req.cache[file];
      throw err;
    }
    mod.loaded = true;
    return mod.exports as Record<string, unknown>;
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
    for (const file of listFiles(this.dir)) {
      const script = this.loaded.get(file)?.script ?? new Script(wrap(readFileSync(file, 'utf8')), { filename: file });
      const data = script.createCachedData();
      writeFileSync(cacheFileOf(file), data);
      bytes += data.length;
    }
    return bytes;
  }
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

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.cjs'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
