/** Resolves at the first SIGINT or SIGTERM (Ctrl-C), and stops listening: a second one is the next call's. */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const handler = () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve();
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** The clock time of a run's own lines (HH:MM:SS, UTC). */
export const stamp = (): string => new Date().toISOString().slice(11, 19);
