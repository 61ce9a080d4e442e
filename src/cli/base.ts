import { Command, Flags, Errors, type Interfaces } from '@oclif/core';
import { PodctlError, escapeControls } from '../core/errors.js';

/** The errors parse() threw: each one a usage error, whatever oclif's class for it. */
const usageErrors = new WeakSet<Error>();

/**
 * Flags every command shares, and one error path: a PodctlError becomes one
 * line on stderr and its exit code; anything else is a bug and keeps its stack
 * with --debug.
 */
export abstract class PodctlCommand extends Command {
  static override baseFlags = {
    'runtime-endpoint': Flags.string({
      char: 'r',
      summary: 'CRI runtime endpoint (unix socket).',
      helpGroup: 'GLOBAL',
      env: 'PODCTL_RUNTIME_ENDPOINT',
    }),
    'image-endpoint': Flags.string({
      char: 'i',
      summary: 'CRI image service endpoint (defaults to the runtime endpoint).',
      helpGroup: 'GLOBAL',
    }),
    config: Flags.string({
      summary: 'podctl config file.',
      helpGroup: 'GLOBAL',
      env: 'PODCTL_CONFIG',
    }),
    'request-timeout': Flags.string({
      summary: 'Deadline for each CRI call, e.g. 30s (image pulls: --pull-timeout).',
      helpGroup: 'GLOBAL',
    }),
    'pull-timeout': Flags.string({
      summary: 'Deadline for each image pull, e.g. 2m.',
      helpGroup: 'GLOBAL',
    }),
    debug: Flags.boolean({ summary: 'Show stack traces and gRPC details on errors.', helpGroup: 'GLOBAL' }),
  };

  /** A parse's output with the --kubelet-config file applied to every flag the command line left at its default. */
  protected async withKubeletConfig<
    T extends { flags: object; metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> } },
  >(out: T): Promise<T> {
    const path = (out.flags as Record<string, unknown>)['kubelet-config'];
    if (typeof path === 'string') {
      // Loaded (with its YAML parser) only when a command is given a file: every command extends this class.
      const { applyKubeletConfig, loadKubeletConfig } = await import('./kubelet-config.js');
      const file = loadKubeletConfig(path);
      const own = new Set(Object.keys({ ...this.ctor.baseFlags, ...this.ctor.flags }));
      const unused = applyKubeletConfig(out.flags as Record<string, unknown>, out.metadata, own, file);
      if (file.notImplemented.length)
        process.stderr.write(
          `podctl: ${path}: KubeletConfiguration fields podctl does not implement, ignored: ${file.notImplemented.join(', ')}\n`,
        );
      if (unused.length) process.stderr.write(`podctl: ${path}: not used by \`${this.id ?? 'podctl'}\`: ${unused.join(', ')}\n`);
    }
    return out;
  }

  protected override async parse<F extends Record<string, unknown>, B extends Record<string, unknown>, A extends Record<string, unknown>>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    try {
      return await super.parse(options, argv);
    } catch (err) {
      if (err instanceof Errors.CLIError) usageErrors.add(err);
      throw err;
    }
  }

  protected debugEnabled(): boolean {
    return this.argv.includes('--debug') || process.env.PODCTL_DEBUG === '1';
  }

  protected override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err;
    // A usage error (a missing argument, an unknown flag, a value not among a flag's options) said as
    // kubectl says one: the error and where the help is. oclif printed the command's whole help
    // below it, some 150 lines for run, which pushed the error itself off the screen.
    if (err instanceof Errors.CLIError && ('parse' in err || usageErrors.has(err))) {
      const usage = `${this.config.bin} ${(this.id ?? '').replaceAll(':', ' ')}`.trim();
      process.stderr.write(
        `Error: ${escapeControls(err.message.replace(/\nSee more help with --help$/, ''))}\nSee '${usage} --help' for usage.\n`,
      );
      this.exit(err.oclif?.exit ?? 2);
    }
    if (err instanceof PodctlError) {
      process.stderr.write(`Error: ${escapeControls(err.describe())}\n`);
      if (this.debugEnabled()) {
        process.stderr.write(`${err.stack ?? ''}\n`);
        if (err.cause) process.stderr.write(`caused by: ${String((err.cause as Error).stack ?? err.cause)}\n`);
      }
      this.exit(err.exitCode);
    }
    if (!this.debugEnabled() && !(err instanceof Errors.CLIError)) {
      process.stderr.write(`Error: ${escapeControls(err.message)}\n(an unexpected error; run again with --debug for the stack trace)\n`);
      this.exit(1);
    }
    return super.catch(err);
  }
}
