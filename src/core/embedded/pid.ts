import { readFileSync } from 'node:fs';

/** The command line of a live process, or undefined when it is gone. */
export function processCmdline(pid: number, readFile: (p: string) => string = (p) => readFileSync(p, 'utf8')): string[] | undefined {
  try {
    const raw = readFile(`/proc/${pid}/cmdline`);
    if (!raw) return undefined;
    return raw.split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/** Reads a pid file and returns the pid only if that process is alive and is what we started. */
export function livePid(pidFile: string, expect: (cmdline: string[]) => boolean, readFile?: (p: string) => string): number | undefined {
  let pid: number;
  try {
    pid = Number((readFile ?? ((p: string) => readFileSync(p, 'utf8')))(pidFile).trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const cmdline = processCmdline(pid, readFile);
  return cmdline && expect(cmdline) ? pid : undefined;
}
