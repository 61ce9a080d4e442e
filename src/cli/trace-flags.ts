import { Flags } from '@oclif/core';

/**
 * --trace and its output format, for the commands that run the sync loop: without the tracer (src/cli/trace.ts), which loads when one runs.
 */
export const traceFlags = {
  trace: Flags.boolean({
    summary: "One line per sync loop iteration: the branch that fired, the pods dispatched, each worker's outcome, duration and CRI calls.",
  }),
  output: Flags.string({
    char: 'o',
    summary: 'With --trace: text, or json (one JSON object per line, for jq).',
    options: ['text', 'json'],
    default: 'text',
  }),
};
