/** kubectl's YAML printer; js-yaml loads when YAML is first asked for, not with the commands that may print it. */
export async function yamlDumper(): Promise<(doc: unknown) => string> {
  const { default: yaml } = await import('js-yaml');
  return (doc) => yaml.dump(doc, { noRefs: true, lineWidth: 120 });
}
