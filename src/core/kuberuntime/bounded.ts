/**
 * The most containers of one pod killed at once (preStop hook and StopContainer). The kubelet kills
 * them all at once; containerd 1.6 runs one shim per pod, and 200 stops at once wedged it (its
 * processes gone, the CRI still saying Running). A pod of up to 16 containers is killed as the
 * kubelet would; see Containers.killAll for why the bound costs no grace.
 */
export const MAX_KILLS_IN_FLIGHT_PER_POD = 16;

/**
 * Runs fn over the items, at most `limit` at a time, each to its end whatever the others do;
 * rejects with the first failure once all are done (a container that failed to stop does not
 * leave the rest unstopped).
 */
export async function eachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.err;
}
