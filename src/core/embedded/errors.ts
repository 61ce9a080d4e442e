import { PodctlError } from '../errors.js';

/** The embedded runtime could not be brought up or down; the hint says what to do. */
export class EmbeddedRuntimeError extends PodctlError {
  constructor(message: string, hint?: string) {
    super(message, { hint });
    this.name = 'EmbeddedRuntimeError';
  }
}
