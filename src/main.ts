// The bundle's entry for bin/run.js (dist/cli/main.js): oclif's execute, from the same copy of oclif
// as the command index (src/commands.ts), the help class and the hooks, which esbuild's chunks share.
export { execute } from '@oclif/core';
