import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';

/**
 * The little of the tar format `cp` needs: ustar headers with GNU long names
 * ('L', 'K') and pax path records ('x'), which busybox and GNU tar write.
 * Archives are read whole and checked before anything is written, so a
 * refused archive leaves the destination untouched.
 */
export type TarEntryType = 'file' | 'directory' | 'symlink';

export interface TarEntry {
  name: string;
  type: TarEntryType;
  mode: number;
  data?: Buffer;
  /** Symlink target. */
  linkname?: string;
}

export class TarError extends Error {}

const BLOCK = 512;

function field(buf: Buffer, off: number, len: number): string {
  const raw = buf.subarray(off, off + len);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul < 0 ? len : nul).toString('utf8');
}

function octal(buf: Buffer, off: number, len: number): number {
  // GNU base-256 for sizes over 8 GiB: refused rather than misread.
  if (buf[off]! & 0x80) throw new TarError('archive entry uses a base-256 size, which podctl cp does not read');
  const text = field(buf, off, len).trim();
  return text ? parseInt(text, 8) : 0;
}

function paxPath(data: Buffer): { path?: string; linkpath?: string } {
  const out: { path?: string; linkpath?: string } = {};
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    if (space < 0) break;
    const len = parseInt(data.subarray(pos, space).toString('ascii'), 10);
    if (!(len > 0)) break;
    const record = data.subarray(space + 1, pos + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    const key = record.slice(0, eq);
    if (key === 'path') out.path = record.slice(eq + 1);
    if (key === 'linkpath') out.linkpath = record.slice(eq + 1);
    pos += len;
  }
  return out;
}

/** Every entry of an archive; hard links, devices and FIFOs are refused (cp copies files, directories and symlinks). */
export function parseTar(buf: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  let pos = 0;
  let longName: string | undefined;
  let longLink: string | undefined;
  while (pos + BLOCK <= buf.length) {
    const header = buf.subarray(pos, pos + BLOCK);
    if (header.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
    if (sum !== octal(header, 148, 8)) throw new TarError(`not a tar archive (bad header checksum at byte ${pos})`);
    const size = octal(header, 124, 12);
    const typeflag = String.fromCharCode(header[156]!);
    const dataStart = pos + BLOCK;
    if (dataStart + size > buf.length) throw new TarError('the archive is truncated');
    const data = buf.subarray(dataStart, dataStart + size);
    pos = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (typeflag === 'L') {
      longName = field(data, 0, data.length);
      continue;
    }
    if (typeflag === 'K') {
      longLink = field(data, 0, data.length);
      continue;
    }
    if (typeflag === 'x') {
      const pax = paxPath(data);
      longName = pax.path ?? longName;
      longLink = pax.linkpath ?? longLink;
      continue;
    }
    if (typeflag === 'g') continue;
    const prefix = field(header, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    const linkname = longLink ?? field(header, 157, 100);
    longName = longLink = undefined;
    const mode = octal(header, 100, 8) & 0o7777;
    if (typeflag === '0' || typeflag === '\0' || typeflag === '7') entries.push({ name, type: 'file', mode, data });
    else if (typeflag === '5') entries.push({ name, type: 'directory', mode });
    else if (typeflag === '2') entries.push({ name, type: 'symlink', mode, linkname });
    else if (typeflag === '1') throw new TarError(`archive entry "${name}" is a hard link, which podctl cp does not copy`);
    else throw new TarError(`archive entry "${name}" has type "${typeflag}" (device, FIFO or unknown), which podctl cp does not copy`);
  }
  return entries;
}

function header(name: string, type: TarEntryType, mode: number, size: number, linkname = ''): Buffer[] {
  const blocks: Buffer[] = [];
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 99) {
    // GNU long name: a pseudo-entry whose data is the name.
    const body = Buffer.concat([nameBytes, Buffer.alloc(1)]);
    blocks.push(...header('././@LongLink', 'file', 0, body.length).map((b, i) => (i === 0 ? withType(b, 'L') : b)));
    blocks.push(pad(body));
  }
  const h = Buffer.alloc(BLOCK);
  nameBytes.subarray(0, 99).copy(h, 0);
  h.write(`${mode.toString(8).padStart(7, '0')}\0`, 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  h.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136, 'ascii');
  h[156] = (type === 'file' ? '0' : type === 'directory' ? '5' : '2').charCodeAt(0);
  Buffer.from(linkname, 'utf8').subarray(0, 99).copy(h, 157);
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  blocks.push(checksum(h));
  return blocks;
}

function withType(h: Buffer, t: string): Buffer {
  h[156] = t.charCodeAt(0);
  return checksum(h);
}

function checksum(h: Buffer): Buffer {
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

function pad(data: Buffer): Buffer {
  const rest = data.length % BLOCK;
  return rest ? Buffer.concat([data, Buffer.alloc(BLOCK - rest)]) : data;
}

/** An archive of these entries, ended by the two zero blocks. */
export function writeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.type === 'symlink' && Buffer.byteLength(e.linkname ?? '') > 99) throw new TarError(`symlink target of "${e.name}" is longer than 99 bytes`);
    parts.push(...header(e.name, e.type, e.mode, e.type === 'file' ? e.data!.length : 0, e.linkname));
    if (e.type === 'file') parts.push(pad(e.data!));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

/** The local file or directory at `path` as entries named under `name` (symlinks kept as symlinks). */
export function entriesFromPath(path: string, name: string): TarEntry[] {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return [{ name, type: 'symlink', mode: 0o777, linkname: readlinkSync(path) }];
  if (st.isFile()) return [{ name, type: 'file', mode: st.mode & 0o7777, data: readFileSync(path) }];
  if (st.isDirectory()) {
    const out: TarEntry[] = [{ name: `${name}/`, type: 'directory', mode: st.mode & 0o7777 }];
    for (const child of readdirSync(path).sort()) out.push(...entriesFromPath(join(path, child), `${name}/${child}`));
    return out;
  }
  throw new TarError(`${path}: not a regular file, directory or symlink`);
}

function within(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Where each entry would land under `dest`, or a TarError naming the first
 * entry that would escape it: an absolute name, a `..` that climbs out, a
 * symlink whose target is absolute or climbs out, or an entry under a symlink.
 * `rename` maps the archive's top-level name to another (cp's `POD:/a local/b`).
 */
export function planExtract(entries: TarEntry[], dest: string, rename?: { from: string; to: string }): { entry: TarEntry; path: string }[] {
  const root = resolve(dest);
  const symlinks = new Set<string>();
  return entries.map((entry) => {
    let name = entry.name;
    if (isAbsolute(name) || /^[a-zA-Z]:/.test(name)) throw new TarError(`refusing archive entry "${entry.name}": an absolute path would be written outside ${dest}`);
    name = posix.normalize(name).replace(/\/$/, '');
    if (name === '..' || name.startsWith('../')) throw new TarError(`refusing archive entry "${entry.name}": it would be written outside ${dest}`);
    if (rename && (name === rename.from || name.startsWith(`${rename.from}/`))) name = rename.to + name.slice(rename.from.length);
    const path = resolve(root, name);
    if (!within(root, path)) throw new TarError(`refusing archive entry "${entry.name}": it would be written outside ${dest}`);
    for (let p = dirname(path); within(root, p) && p !== root; p = dirname(p)) {
      if (symlinks.has(p)) throw new TarError(`refusing archive entry "${entry.name}": it would be written through the symlink ${relative(root, p)}`);
    }
    if (entry.type === 'symlink') {
      const target = entry.linkname ?? '';
      if (isAbsolute(target)) throw new TarError(`refusing archive entry "${entry.name}": a symlink to the absolute path ${target}`);
      if (!within(root, resolve(dirname(path), target))) throw new TarError(`refusing archive entry "${entry.name}": a symlink to ${target}, outside ${dest}`);
      symlinks.add(path);
    }
    return { entry, path };
  });
}

/**
 * Writes a checked plan. An existing path component that is a symlink
 * leading out of `dest` is refused as well (the destination may hold one).
 */
export function extractPlanned(plan: { entry: TarEntry; path: string }[], dest: string): void {
  const root = realpathSync(resolve(dest));
  for (const { entry, path } of plan) {
    mkdirSync(dirname(path), { recursive: true });
    if (!within(root, realpathSync(dirname(path)))) throw new TarError(`refusing archive entry "${entry.name}": its directory leads outside ${dest} through a symlink`);
    let existing: ReturnType<typeof lstatSync> | undefined;
    try {
      existing = lstatSync(path);
    } catch {
      existing = undefined;
    }
    if (existing?.isSymbolicLink()) throw new TarError(`refusing archive entry "${entry.name}": ${path} is a symlink already`);
    if (entry.type === 'directory') {
      mkdirSync(path, { recursive: true });
    } else if (entry.type === 'file') {
      writeFileSync(path, entry.data!, { mode: entry.mode || 0o644 });
      chmodSync(path, entry.mode || 0o644);
    } else {
      symlinkSync(entry.linkname!, path);
    }
  }
}
