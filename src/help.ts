import { Help } from '@oclif/core/help';
import { addHelpDetails } from './cli/help-details.js';

/**
 * oclif's help (package.json's oclif.helpClass), rendering through ejs only
 * the text that has a template tag: ejs compiles every string it renders into
 * a function, and the root help renders each command's summary, about 20 ms
 * of `podctl --help` for text that has none.
 */
export default class PodctlHelp extends Help {
  constructor(...args: ConstructorParameters<typeof Help>) {
    super(...args);
    const render = this.render;
    this.render = (input: string) => (input.includes('<%') ? render(input) : input);
  }

  /** A command's help (--help, help, oclif's after a usage error), with its flags and texts, which start-up does not load; the root's and a topic's list summaries only. */
  override async showCommandHelp(command: Parameters<Help['showCommandHelp']>[0]): Promise<void> {
    addHelpDetails(this.config);
    return super.showCommandHelp(command);
  }
}
