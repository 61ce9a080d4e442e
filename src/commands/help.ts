import { commands } from '@oclif/plugin-help';

/**
 * `podctl help [COMMAND]`: @oclif/plugin-help's command, as a command of
 * podctl's own index rather than a plugin oclif finds and loads at every start.
 */
export class Help extends commands.help {
  static override examples = ['<%= config.bin %> help', '<%= config.bin %> help get pods', '<%= config.bin %> help runtime --nested-commands'];
}
