import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDNS1123Subdomain } from '../pod/names.js';
import type { KubeObject } from './store.js';

/**
 * The objects the API owns itself (ConfigMaps, Secrets, the Namespaces clients made), kept across agent restarts: one JSON
 * file per object at <dir>/<resource>/<namespace>/<name>.json (<dir>/<resource>/<name>.json for a cluster-scoped one),
 * written whole (temp file, fsync, rename), mode 0600 in 0700 directories since Secrets are among them. <dir>/version
 * holds the highest resourceVersion the agent may have handed out.
 */

export interface StoredObject {
  resource: string;
  obj: KubeObject;
}

const RESOURCE = /^[a-z][a-z0-9]*$/;
const mtimeKey = (resource: string, namespace: string | undefined, name: string) => `${resource}/${namespace ?? ''}/${name}`;
const TEMP_SUFFIX = '.tmp';
const VERSION_FILE = 'version';

/**
 * The first version of a restarted agent's cache. `persisted` is a reservation written before any version above the one
 * before it was handed out (WatchCache's reserveVersions), so starting there keeps versions increasing even when the clock
 * went back. The clock in microseconds covers a lost or unreadable version file: it passes any count of the agent's
 * writes, which cannot come faster than one a microsecond. A client's version from before a restart is then below the new
 * start and is answered 410 Expired, so it relists, as it must since the pods' versions began again.
 */
export function startVersionFor(persisted: number | undefined, nowMs: number): number {
  return Math.max(persisted ?? 0, Math.floor(nowMs) * 1000);
}

export class ObjectFiles {
  /** Each kept object's file's mtime, by resource/namespace/name: when the API last wrote it. */
  private readonly mtimes = new Map<string, number>();

  constructor(
    private readonly dir: string,
    private readonly log: (message: string) => void = () => {},
  ) {}

  /** Every object kept, each file checked: one that cannot be read as the object its path names is skipped and logged. */
  load(): StoredObject[] {
    const out: StoredObject[] = [];
    for (const resource of this.entries(this.dir, true)) {
      if (!RESOURCE.test(resource)) continue;
      const dirs: [string, string | undefined][] = [[join(this.dir, resource), undefined]];
      for (const namespace of this.entries(join(this.dir, resource), true)) dirs.push([join(this.dir, resource, namespace), namespace]);
      for (const [dir, namespace] of dirs) {
        for (const file of this.entries(dir, false)) {
          const path = join(dir, file);
          if (file.startsWith('.') && file.endsWith(TEMP_SUFFIX)) {
            // A write that a crash cut short: the rename never happened, the previous file (if any) is whole.
            rmSync(path, { force: true });
            continue;
          }
          const obj = this.read(path, resource, namespace, file);
          if (!obj) continue;
          out.push({ resource, obj });
          this.mtimes.set(mtimeKey(resource, namespace, obj.metadata!.name!), statSync(path).mtimeMs);
        }
      }
    }
    return out;
  }

  /** Keeps obj (a cluster-scoped one has no metadata.namespace). */
  save(resource: string, obj: KubeObject): void {
    const { name, namespace } = obj.metadata ?? {};
    const dir = this.dirOf(resource, namespace, `${resource}: metadata.namespace`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = `${checkName(name, `${resource}: metadata.name`)}.json`;
    writeAtomically(dir, file, `${JSON.stringify(obj)}\n`);
    this.mtimes.set(mtimeKey(resource, namespace, name!), statSync(join(dir, file)).mtimeMs);
  }

  /** When the object was last written (its file's mtime), in ms since the epoch; undefined for one not kept. */
  writtenAt(resource: string, namespace: string | undefined, name: string): number | undefined {
    return this.mtimes.get(mtimeKey(resource, namespace, name));
  }

  delete(resource: string, namespace: string | undefined, name: string): void {
    const dir = this.dirOf(resource, namespace, `${resource}: namespace`);
    rmSync(join(dir, `${checkName(name, `${resource}: name`)}.json`), { force: true });
    this.mtimes.delete(mtimeKey(resource, namespace, name));
    try {
      fsyncDir(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  /** The version last reserved; undefined when none was kept or the file is unreadable (logged). */
  readVersion(): number | undefined {
    const path = join(this.dir, VERSION_FILE);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      this.log(`${path}: cannot be read (${(e as Error).message}); resourceVersions start from the clock`);
      return undefined;
    }
    const v = Number(text.trim());
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(v)) {
      this.log(
        `${path}: expected a decimal resourceVersion, found ${JSON.stringify(text.slice(0, 40))}; resourceVersions start from the clock`,
      );
      return undefined;
    }
    return v;
  }

  saveVersion(version: number): void {
    if (!Number.isSafeInteger(version) || version < 0)
      throw new Error(`resourceVersion to keep: expected a non-negative integer, got ${version}`);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeAtomically(this.dir, VERSION_FILE, `${version}\n`);
  }

  private dirOf(resource: string, namespace: string | undefined, what: string): string {
    const dir = join(this.dir, checkResource(resource));
    return namespace === undefined ? dir : join(dir, checkName(namespace, what));
  }

  private entries(dir: string, dirs: boolean): string[] {
    try {
      return readdirSync(dir, { withFileTypes: true })
        .filter((d) => (dirs ? d.isDirectory() : d.isFile()))
        .map((d) => d.name)
        .sort();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  }

  private read(path: string, resource: string, namespace: string | undefined, file: string): KubeObject | undefined {
    const skip = (why: string) => {
      this.log(`${path}: ${why}; skipped`);
      return undefined;
    };
    if (!file.endsWith('.json')) return skip('not a <name>.json file');
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      // Only where: Node's message quotes the text, and a Secret's data must not reach the log.
      const at = /at position (\d+)/.exec((e as Error).message);
      return skip(`not valid JSON${at ? ` (at position ${at[1]})` : ''}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return skip(`expected a ${resource} object`);
    const meta = (parsed as KubeObject).metadata;
    const name = file.slice(0, -'.json'.length);
    if (meta?.name !== name || meta?.namespace !== namespace) {
      const named = (ns: string | undefined, n: unknown) => (ns === undefined ? String(n) : `${ns}/${String(n)}`);
      return skip(`holds ${JSON.stringify(named(meta?.namespace, meta?.name))}, not the ${named(namespace, name)} its path names`);
    }
    return parsed as KubeObject;
  }
}

function checkResource(resource: string): string {
  if (!RESOURCE.test(resource)) throw new Error(`resource ${JSON.stringify(resource)}: expected a lowercase plural such as "configmaps"`);
  return resource;
}

/** A namespace or name as a path element: a DNS-1123 subdomain (what the API allows them to be) cannot climb out or hide. */
function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || !isDNS1123Subdomain(value)) {
    throw new Error(`${what} ${JSON.stringify(value)}: expected a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")`);
  }
  return value;
}

/** Writes dir/file whole: a new temp file (mode 0600), flushed, renamed over the old one, and the rename flushed. */
function writeAtomically(dir: string, file: string, text: string): void {
  const temp = join(dir, `.${file}${TEMP_SUFFIX}`);
  rmSync(temp, { force: true });
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dir, file));
  fsyncDir(dir);
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
