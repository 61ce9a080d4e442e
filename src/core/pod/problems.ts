import { PodctlError } from '../errors.js';
import type { ManifestProblem } from './types.js';

// Apart from the loader, which loads the API validators: a command that leaves the reading of its
// manifests to the agent prints the agent's problems with these, and loads no validator.

/** Every problem on its own line: file, document, field, what was expected. */
export function formatProblem(p: ManifestProblem): string {
  if (p.index < 0) return `${p.file}: ${p.message}`;
  const what = p.kind ? ` (${p.kind}${p.name ? ` "${p.name}"` : ''})` : '';
  return `${p.file}: document ${p.index + 1}${what}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

export class ManifestError extends PodctlError {
  readonly problems: ManifestProblem[];
  /** Warnings found alongside the errors (podctl validate lists both). */
  readonly warnings: ManifestProblem[];

  constructor(problems: ManifestProblem[], warnings: ManifestProblem[] = []) {
    const lines = problems.map(formatProblem);
    const files = [...new Set(problems.map((p) => p.file))];
    super(problems.length === 1 ? `${lines[0]}` : `${problems.length} problems in ${files.join(', ')}:\n  ${lines.join('\n  ')}`, {
      hint: 'nothing was started; fix the manifest and run again',
      exitCode: 2,
    });
    this.name = 'ManifestError';
    this.problems = problems;
    this.warnings = warnings;
  }
}
