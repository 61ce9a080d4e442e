import { openSync, readSync, closeSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { CriLogParser } from '../core/logs/index.js';
import { podMeta } from '../core/util/pod-key.js';

/**
 * Streams the containers' output of the given pods as `docker compose up` does: each line prefixed
 * `pod/container | `. Polls the CRI log files under the log root (every instance, in order), so it
 * needs nothing from the runtime and follows restarts. Returns the stop function.
 */
export function streamPodLogs(logRoot: string, pods: () => IPod[], write: (line: string) => void, pollMs = 300): () => void {
  const files = new Map<string, { offset: number; parser: CriLogParser }>();
  const poll = () => {
    for (const pod of pods()) {
      const m = podMeta(pod);
      const dir = join(logRoot, `${m.namespace}_${m.name}_${m.uid}`);
      let containers: string[];
      try {
        containers = readdirSync(dir);
      } catch {
        continue;
      }
      for (const c of containers) {
        let logs: string[];
        try {
          logs = readdirSync(join(dir, c))
            .filter((f) => /^\d+\.log$/.test(f))
            .sort((a, b) => parseInt(a) - parseInt(b));
        } catch {
          continue;
        }
        for (const f of logs) {
          const path = join(dir, c, f);
          const state = files.get(path) ?? { offset: 0, parser: new CriLogParser() };
          files.set(path, state);
          let size: number;
          try {
            size = statSync(path).size;
          } catch {
            continue;
          }
          if (size < state.offset) state.offset = 0;
          if (size === state.offset) continue;
          const buf = Buffer.alloc(Math.min(size - state.offset, 1 << 20));
          const fd = openSync(path, 'r');
          try {
            state.offset += readSync(fd, buf, 0, buf.length, state.offset);
          } finally {
            closeSync(fd);
          }
          for (const r of state.parser.push(buf.toString('utf8'))) write(`${m.name}/${c} | ${r.text}`);
        }
      }
    }
  };
  const timer = setInterval(poll, pollMs);
  return () => {
    clearInterval(timer);
    poll();
  };
}
