import yaml from 'js-yaml';

/**
 * Integers as Kubernetes reads manifests (YAML 1.1, through go-yaml): a
 * leading 0 means octal, so `defaultMode: 0400` is 256, not 400 as YAML 1.2
 * (js-yaml's default) would have it, which would make a secret group-writable.
 */
const yaml11Int = new yaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && /^[-+]?(0|[1-9][0-9_]*|0[0-7_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)$/.test(data),
  construct: (data: string) => {
    const clean = data.replace(/_/g, '');
    const sign = clean.startsWith('-') ? -1 : 1;
    const digits = clean.replace(/^[-+]/, '');
    if (/^0[0-7]+$/.test(digits)) return sign * parseInt(digits.slice(1), 8);
    if (digits.startsWith('0o')) return sign * parseInt(digits.slice(2), 8);
    if (digits.startsWith('0x')) return sign * parseInt(digits.slice(2), 16);
    if (digits.startsWith('0b')) return sign * parseInt(digits.slice(2), 2);
    return sign * parseInt(digits, 10);
  },
  predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
  represent: (v: object) => String(v),
});

/**
 * YAML 1.1 booleans, as the kubelet's YAML reader (go-yaml v2) resolves them:
 * `readOnly: yes` is true there, and `value: no` is a boolean where a string
 * belongs (an error on a cluster, so an error here too, not a silent "no").
 */
const YAML11_TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const yaml11Bool = new yaml.Type('tag:yaml.org,2002:bool', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && (YAML11_TRUE.has(data) || YAML11_FALSE.has(data)),
  construct: (data: string) => YAML11_TRUE.has(data),
  predicate: (v: unknown) => typeof v === 'boolean',
  represent: (v: object) => String(v),
});

// js-yaml exports its built-in types at run time; @types/js-yaml does not declare them.
const builtin = (yaml as unknown as { types: Record<'null' | 'float' | 'str' | 'seq' | 'map', yaml.Type> }).types;

export const MANIFEST_SCHEMA = new yaml.Schema({
  implicit: [builtin.null, yaml11Bool, yaml11Int, builtin.float],
  explicit: [builtin.str, builtin.seq, builtin.map],
});
