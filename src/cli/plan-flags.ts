import { Flags } from '@oclif/core';

/** The flags of a plan: their own module, so that `run`, which takes --prune with --dry-run, loads the planner only when it plans. */
export const planFlags = {
  prune: Flags.boolean({
    summary: 'Also plan the removal of every pod podctl made that the given files do not describe.',
    description:
      'Without it, a plan over one file says nothing about other pods: `plan pod.yaml` must not threaten every other pod on the host.',
  }),
};
