const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function isDNS1123Label(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value);
}

export function isDNS1123Subdomain(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

/** A label or annotation key: [prefix/]name, as the API server checks it; undefined when valid. */
export function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return 'a qualified name has at most one "/"';
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]!];
  if (prefix !== undefined && !isDNS1123Subdomain(prefix)) return `prefix "${prefix}" must be a DNS-1123 subdomain`;
  if (!name || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    return 'name part must be 63 characters or less, alphanumeric, "-", "_" or ".", starting and ending with an alphanumeric character';
  }
  return undefined;
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

export const DNS1123_LABEL_EXPECTED =
  'a DNS-1123 label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit';
export const DNS1123_SUBDOMAIN_EXPECTED =
  'a DNS-1123 subdomain: at most 253 lowercase letters, digits, "-" and ".", starting and ending with a letter or digit';
