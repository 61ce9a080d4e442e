import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IContainerStateTerminated, IPodStatus } from 'kubernetes-models/v1';

const FILE = 'termination-records.json';

/**
 * Each container's last termination (exit code, reason, message, times), kept
 * in the pod's own directory: once container GC removed the dead instance, or
 * after an agent restart, the status still shows it as Last State.
 */
export class TerminationRecords {
  private readonly byPod = new Map<string, Record<string, IContainerStateTerminated>>();

  /** podDir: the pod's state directory under the root dir, or undefined when there is none. */
  constructor(private readonly podDir: (uid: string) => string | undefined) {}

  private load(uid: string): Record<string, IContainerStateTerminated> {
    let records = this.byPod.get(uid);
    if (records) return records;
    records = {};
    const dir = this.podDir(uid);
    if (dir) {
      try {
        const parsed = JSON.parse(readFileSync(join(dir, FILE), 'utf8')) as unknown;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) records = parsed as Record<string, IContainerStateTerminated>;
      } catch {
        // None yet, or unreadable: start afresh.
      }
    }
    this.byPod.set(uid, records);
    return records;
  }

  get(uid: string, container: string): IContainerStateTerminated | undefined {
    return this.load(uid)[container];
  }

  /** Keeps the newest termination each container status shows; writes only when one changed. */
  remember(uid: string, status: IPodStatus): void {
    const records = this.load(uid);
    let changed = false;
    for (const cs of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
      const t = cs.state?.terminated ?? cs.lastState?.terminated;
      if (!t?.containerID || !t.finishedAt) continue;
      const known = records[cs.name];
      if (known && known.containerID === t.containerID && known.finishedAt === t.finishedAt) continue;
      if (known?.finishedAt && Date.parse(known.finishedAt) > Date.parse(t.finishedAt)) continue;
      records[cs.name] = t;
      changed = true;
    }
    const dir = this.podDir(uid);
    if (!changed || !dir) return;
    try {
      // Into the pod's directory only while it exists: a late status must not bring back a removed pod's.
      writeFileSync(join(dir, `${FILE}.tmp`), JSON.stringify(records), { mode: 0o600 });
      renameSync(join(dir, `${FILE}.tmp`), join(dir, FILE));
    } catch {
      // A record is a convenience: a failed write must not stop a sync.
    }
  }

  forget(uid: string): void {
    this.byPod.delete(uid);
  }
}
