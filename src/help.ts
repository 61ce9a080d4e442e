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

  /** Every help (--help, help, a topic's) starts here: with the commands' flags and texts, which start-up does not load. */
  override async showHelp(argv: string[]): Promise<void> {
    addHelpDetails(this.config);
    return super.showHelp(argv);
  }
}
