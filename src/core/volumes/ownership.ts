import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/**
 * The kubelet's SetVolumeOwnership: every file and directory gets group fsGroup, group read (and write unless
 * the volume is read-only), directories also setgid and group search, so new files inherit the group.
 * Symlinks are re-grouped but never chmod-ed (that would reach their target). Only what differs is changed,
 * so a second call leaves the disk as it is. Stays on the volume's filesystem: does not descend into mounts.
 */
export async function setVolumeOwnership(dir: string, fsGroup: number, readOnly: boolean): Promise<void> {
  const rootDev = (await lstat(dir)).dev;
  const mask = readOnly ? RO_MASK : RW_MASK;
  const visit = async (p: string): Promise<void> => {
    const st = await lstat(p);
    if (st.dev !== rootDev) return;
    if (st.gid !== fsGroup) await lchown(p, -1, fsGroup);
    if (st.isSymbolicLink()) return;
    const want = (st.mode & 0o7777) | mask | (st.isDirectory() ? SETGID | EXEC_MASK : 0);
    if ((st.mode & 0o7777) !== want) await chmod(p, want);
    if (st.isDirectory()) for (const e of await readdir(p)) await visit(join(p, e));
  };
  await visit(dir);
}
