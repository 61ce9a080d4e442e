import type { IPod } from 'kubernetes-models/v1';
import { bytes, milliCPU } from '../util/quantity.js';

const same = (r: string, a: string | number, b: string | number) => (r === 'cpu' ? milliCPU(a) === milliCPU(b) : bytes(a) === bytes(b));

/** Guaranteed / Burstable / BestEffort by the Kubernetes rules (cpu and memory only; quantities compared by value). */
export function qosClass(pod: IPod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let anySet = false;
  let guaranteed = true;
  for (const c of all) {
    const req = (c.resources?.requests ?? {}) as Record<string, string | number>;
    const lim = (c.resources?.limits ?? {}) as Record<string, string | number>;
    for (const r of ['cpu', 'memory']) {
      const rq = req[r] ?? lim[r];
      const lm = lim[r];
      if (rq !== undefined || lm !== undefined) anySet = true;
      if (lm === undefined || rq === undefined || !same(r, rq, lm)) guaranteed = false;
    }
  }
  if (!anySet) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
