import { Flags } from '@oclif/core';
import { realClock } from '../core/clock.js';
import type { PodCache } from '../core/pleg/cache.js';
import { formatTraceEvent, Tracer } from '../core/trace.js';

/** --trace and its output format, for the commands that run the sync loop. */
export const traceFlags = {
  trace: Flags.boolean({
    summary: 'One line per sync loop iteration: the branch that fired, the pods dispatched, each worker\'s outcome, duration and CRI calls.',
  }),
  output: Flags.string({ char: 'o', summary: 'With --trace: text, or json (one JSON object per line, for jq).', options: ['text', 'json'], default: 'text' }),
};

/** The tracer for --trace (undefined without it); lines go to `log`. The PLEG is read lazily for exit codes. */
export function tracerFor(flags: { trace?: boolean; output?: string }, pleg: () => { cache: PodCache } | undefined, log: (line: string) => void): Tracer | undefined {
  if (!flags.trace) return undefined;
  return new Tracer({
    clock: realClock,
    emit: (e) => log(flags.output === 'json' ? JSON.stringify(e) : formatTraceEvent(e)),
    quiet: true,
    exitCode: (e) => pleg()?.cache.get(e.id)?.containers.find((c) => c.id === e.data)?.exitCode,
  });
}
