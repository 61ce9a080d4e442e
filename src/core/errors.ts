/**
 * An error meant for a person: `message` is one line saying what failed,
 * `hint` (optional) says what to do about it. Commands print these without a
 * stack trace unless --debug is given.
 */
export class PodctlError extends Error {
  readonly hint?: string;
  readonly exitCode: number;

  constructor(message: string, opts: { hint?: string; exitCode?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'PodctlError';
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? 1;
  }

  /** The single line shown to the user. */
  describe(): string {
    return this.hint ? `${this.message}; ${this.hint}` : this.message;
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof PodctlError) return err.describe();
  if (err instanceof Error) return err.message;
  return String(err);
}
