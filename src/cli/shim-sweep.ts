import { errorMessage } from '../core/errors.js';
import { embeddedEndpoint, embeddedPaths } from '../core/embedded/paths.js';
import { LostShimSweeper } from '../core/embedded/shims.js';

/**
 * On the embedded runtime, the shims its containerd loses are ended by the agent too (src/core/embedded/shims.ts):
 * runtime up and down end them, and a host may run for weeks between the two. Once a minute; the timer, to clear.
 */
export function sweepLostShims(
  endpoint: string,
  say: (line: string) => void,
  sayError: (line: string) => void,
): NodeJS.Timeout | undefined {
  const paths = embeddedPaths();
  if (endpoint !== embeddedEndpoint(paths)) return undefined;
  const sweeper = new LostShimSweeper(paths, say);
  const sweeps = setInterval(
    () => void sweeper.sweep(Date.now()).catch((err: unknown) => sayError(`error: lost shims: ${errorMessage(err)}`)),
    60_000,
  );
  sweeps.unref();
  return sweeps;
}
