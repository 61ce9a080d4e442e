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

/**
 * What a terminal must not interpret in text podctl echoes (names a user or a manifest gave):
 * control characters other than newline and tab, and C1 controls, shown as \x1b and the like.
 */
export function escapeControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** A name as an error message quotes it: JSON-style, so a newline or an escape sequence shows as such. */
export function quoteName(name: string): string {
  return escapeControls(JSON.stringify(name));
}
