/**
 * A command's long description as written across source lines: the lines of a paragraph are
 * joined, so that oclif's help wraps them to the terminal's width instead of breaking each one
 * where the source did. A blank line parts paragraphs; a line that starts with "- " (a list item)
 * keeps a line of its own (oclif's wrap drops leading spaces, so a table would not keep its columns).
 */
export function prose(strings: TemplateStringsArray, ...values: unknown[]): string {
  const text = strings.reduce((out, s, i) => out + s + (i < values.length ? String(values[i]) : ''), '');
  return text
    .split(/\n[ \t]*\n/)
    .map((paragraph) =>
      paragraph
        .split('\n')
        .map((line) => line.trimEnd())
        .reduce((out, line) => (!out ? line : /^- /.test(line) ? `${out}\n${line}` : `${out} ${line.trimStart()}`), ''),
    )
    .join('\n\n');
}
