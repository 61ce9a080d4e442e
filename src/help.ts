import { Help } from '@oclif/core/help';

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
}
