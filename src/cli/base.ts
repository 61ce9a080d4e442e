import { Command, Flags, Errors } from '@oclif/core';
import { PodctlError, escapeControls } from '../core/errors.js';

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
  protected async withKubeletConfig<T extends { flags: object; metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> } }>(out: T): Promise<T> {
    const path = (out.flags as Record<string, unknown>)['kubelet-config'];
    if (typeof path === 'string') {
      // Loaded (with its YAML parser) only when a command is given a file: every command extends this class.
      const { applyKubeletConfig, loadKubeletConfig } = await import('./kubelet-config.js');
      const file = loadKubeletConfig(path);
      const own = new Set(Object.keys({ ...this.ctor.baseFlags, ...this.ctor.flags }));
      const unused = applyKubeletConfig(out.flags as Record<string, unknown>, out.metadata, own, file);
      if (file.notImplemented.length) process.stderr.write(`podctl: ${path}: KubeletConfiguration fields podctl does not implement, ignored: ${file.notImplemented.join(', ')}\n`);
      if (unused.length) process.stderr.write(`podctl: ${path}: not used by \`${this.id ?? 'podctl'}\`: ${unused.join(', ')}\n`);
    }
    return out;
  }

  protected debugEnabled(): boolean {
    return this.argv.includes('--debug') || process.env.PODCTL_DEBUG === '1';
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err;
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
