import { realClock } from '../core/clock.js';
import type { PodCache } from '../core/pleg/cache.js';
import { formatTraceEvent, Tracer } from '../core/trace.js';

export { traceFlags } from './trace-flags.js';

/** The tracer for --trace (undefined without it); lines go to `log`. The PLEG is read lazily for exit codes. */
export function tracerFor(
  flags: { trace?: boolean; output?: string },
  pleg: () => { cache: PodCache } | undefined,
  log: (line: string) => void,
): Tracer | undefined {
  if (!flags.trace) return undefined;
  return new Tracer({
    clock: realClock,
    emit: (e) => log(flags.output === 'json' ? JSON.stringify(e) : formatTraceEvent(e)),
    quiet: true,
    exitCode: (e) =>
      pleg()
        ?.cache.get(e.id)
        ?.containers.find((c) => c.id === e.data)?.exitCode,
  });
}
