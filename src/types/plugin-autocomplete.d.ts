// @oclif/plugin-autocomplete's package exports no command classes; podctl lists its
// commands in its own index (src/commands.ts) and the bundle resolves these paths
// inside the package (scripts/bundle.mjs).
declare module '@oclif/plugin-autocomplete/lib/commands/autocomplete/*.js' {
  import type { Command } from '@oclif/core';

  const command: Command.Class;
  export default command;
}
