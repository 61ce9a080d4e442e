import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MountEntry {
  mountPoint: string;
  fsType: string;
  source: string;
}

/** mountinfo escapes space, tab, newline and backslash as octal (\040). */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The mounts this process sees, from /proc/self/mountinfo. */
export async function mountTable(): Promise<MountEntry[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    if (sep < 0 || fields.length < sep + 3) continue;
    out.push({ mountPoint: unescapeOctal(fields[4]!), fsType: fields[sep + 1]!, source: unescapeOctal(fields[sep + 2]!) });
  }
  return out;
}

export async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountTable()).some((m) => m.mountPoint === dir);
}

/** Mount points at or below dir (a real path), deepest first, so that they can be unmounted in order. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const found = new Set((await mountTable()).map((m) => m.mountPoint).filter((p) => p === dir || p.startsWith(prefix)));
  return [...found].sort((a, b) => b.length - a.length);
}

async function runTool(file: string, args: string[]): Promise<void> {
  try {
    await run(file, args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${file} ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** A tmpfs on dir (argv, no shell); size in bytes when given, as the kubelet's emptyDir medium Memory. */
export async function mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
  const opts = sizeBytes !== undefined && sizeBytes > 0 ? ['-o', `size=${sizeBytes}`] : [];
  await runTool('mount', ['-t', 'tmpfs', ...opts, 'tmpfs', dir]);
}

/** A bind mount; no canonicalization, so a /proc/<pid>/fd/<n> source reaches the kernel as is. */
export async function bindMount(source: string, target: string): Promise<void> {
  await runTool('mount', ['--no-canonicalize', '--bind', source, target]);
}

export async function unmount(dir: string): Promise<void> {
  await runTool('umount', [dir]);
}
