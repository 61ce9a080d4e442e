import { KubeStatusError } from './status.js';

/**
 * Label and field selectors as the API server parses them (k8s.io/apimachinery labels and fields, Kubernetes 1.32),
 * with its messages word for word: kubectl shows them as `Error from server (BadRequest): ...`.
 */
export type LabelMatcher = (labels?: Record<string, string>) => boolean;
export type FieldMatcher = (obj: unknown) => boolean;

const badRequest = (message: string) => new KubeStatusError(400, 'BadRequest', message);

// ---- validation messages (apimachinery/pkg/util/validation) ----

const QNAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${QNAME_FMT})?`;
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
  'alphanumeric character';
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an " +
  'alphanumeric character';
const QNAME_RE = new RegExp(`^${QNAME_FMT}$`);
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** The API server's wording: each example followed by "', " and joined by " or " (hence its double spaces). */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (!examples.length) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}
const maxLen = (n: number) => `must be no more than ${n} characters`;
const bytes = (s: string) => Buffer.byteLength(s);

function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (bytes(value) > 253) errs.push(maxLen(253));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

/** IsQualifiedName: a label key, [prefix/]name. */
export function labelKeyErrors(value: string): string[] {
  const parts = value.split('/');
  const errs: string[] = [];
  if (parts.length > 2) {
    return [
      `a qualified name ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix ` +
        "and '/' (e.g. 'example.com/MyName')",
    ];
  }
  const name = parts[parts.length - 1]!;
  if (parts.length === 2) {
    if (parts[0] === '') errs.push('prefix part must be non-empty');
    else errs.push(...dns1123SubdomainErrors(parts[0]!).map((m) => `prefix part ${m}`));
  }
  if (name === '') errs.push('name part must be non-empty');
  else if (bytes(name) > 63) errs.push(`name part ${maxLen(63)}`);
  if (!QNAME_RE.test(name)) errs.push(`name part ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** IsValidLabelValue. */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (bytes(value) > 63) errs.push(maxLen(63));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** A field.Invalid error as Go prints it; a nil path prints as "<nil>". */
const invalid = (path: string, value: string, detail: string) => `${path}: Invalid value: ${JSON.stringify(value)}: ${detail}`;

/** An aggregate of errors as Go prints it: one alone, several (duplicates once) in brackets. */
function aggregate(msgs: string[]): string {
  const seen = [...new Set(msgs)];
  return seen.length === 1 ? seen[0]! : `[${seen.join(', ')}]`;
}

// ---- label selectors (apimachinery/pkg/labels/selector.go) ----

type Tok = 'end' | ')' | ',' | '!' | '==' | '=' | '>' | 'id' | 'in' | '<' | '!=' | 'notin' | '(';
interface Item {
  tok: Tok;
  lit: string;
}
type Op = 'in' | 'notin' | '=' | '==' | '!=' | 'gt' | 'lt' | 'exists' | '!';
interface Requirement {
  key: string;
  op: Op;
  values: string[];
}

const SPECIAL = new Set(['=', '!', '(', ')', ',', '>', '<']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

function lex(s: string): Item[] {
  const items: Item[] = [];
  let i = 0;
  // Go's lexer reads bytes and takes a NUL for the end of the input.
  const at = (k: number) => (k < s.length && s[k] !== '\0' ? s[k]! : '');
  for (;;) {
    while (WHITESPACE.has(at(i))) i++;
    const c = at(i);
    if (c === '') {
      items.push({ tok: 'end', lit: '' });
      return items;
    }
    if (SPECIAL.has(c)) {
      const two = c + at(i + 1);
      const lit = two === '!=' || two === '==' ? two : c;
      i += lit.length;
      items.push({ tok: lit as Tok, lit });
      continue;
    }
    let j = i;
    while (at(j) !== '' && !SPECIAL.has(at(j)) && !WHITESPACE.has(at(j))) j++;
    const lit = s.slice(i, j);
    i = j;
    items.push({ tok: lit === 'in' || lit === 'notin' ? lit : 'id', lit });
  }
}

class LabelParser {
  private pos = 0;
  constructor(private readonly items: Item[]) {}

  /** In a value position, the keywords in and notin are plain identifiers. */
  private peek(values = true): Item {
    const it = this.items[this.pos]!;
    return values && (it.tok === 'in' || it.tok === 'notin') ? { tok: 'id', lit: it.lit } : it;
  }
  private next(values = true): Item {
    const it = this.peek(values);
    this.pos++;
    return it;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.peek();
      if (tok === 'end') return reqs;
      if (tok !== 'id' && tok !== '!') throw new Error(`found '${lit}', expected: !, identifier, or 'end of string'`);
      let r: Requirement;
      try {
        r = this.requirement();
      } catch (e) {
        throw new Error(`unable to parse requirement: ${(e as Error).message}`);
      }
      reqs.push(r);
      const t = this.next();
      if (t.tok === 'end') return reqs;
      if (t.tok !== ',') throw new Error(`found '${t.lit}', expected: ',' or 'end of string'`);
      const t2 = this.peek();
      if (t2.tok !== 'id' && t2.tok !== '!') throw new Error(`found '${t2.lit}', expected: identifier after ','`);
    }
  }

  private requirement(): Requirement {
    let unary: Op | undefined;
    let t = this.next();
    if (t.tok === '!') {
      unary = '!';
      t = this.next();
    }
    if (t.tok !== 'id') throw new Error(`found '${t.lit}', expected: identifier`);
    const key = t.lit;
    const keyErrs = labelKeyErrors(key);
    if (keyErrs.length) throw new Error(invalid('<nil>', key, keyErrs.join('; ')));
    const after = this.peek().tok;
    if (!unary && (after === 'end' || after === ',')) unary = 'exists';
    if (unary) return { key, op: unary, values: [] };
    const o = this.next(false);
    const op = ({ in: 'in', notin: 'notin', '=': '=', '==': '==', '!=': '!=', '>': 'gt', '<': 'lt' } as Record<string, Op>)[o.tok];
    if (!op) throw new Error(`found '${o.lit}', expected: ${BINARY_OPERATORS}`);
    const values = op === 'in' || op === 'notin' ? this.valueSet() : this.exactValue();
    return newRequirement(key, op, [...new Set(values)].sort());
  }

  private valueSet(): string[] {
    const open = this.next();
    if (open.tok !== '(') throw new Error(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.peek();
    if (tok === ')') {
      this.next();
      return [''];
    }
    if (tok !== 'id' && tok !== ',') throw new Error(`found '${lit}', expected: ',', ')' or identifier`);
    const values: string[] = [];
    for (;;) {
      const t = this.next();
      if (t.tok === 'id') {
        values.push(t.lit);
        const t2 = this.peek();
        if (t2.tok === ')') break;
        if (t2.tok !== ',') throw new Error(`found '${t2.lit}', expected: ',' or ')'`);
      } else if (t.tok === ',') {
        // Empty values around commas: "(,a)", "(a,)", "(a,,b)".
        if (!values.length) values.push('');
        const t2 = this.peek().tok;
        if (t2 === ')' || t2 === ',') values.push('');
        if (t2 === ')') break;
      } else throw new Error(`found '${t.lit}', expected: ',', or identifier`);
    }
    this.next();
    return values;
  }

  private exactValue(): string[] {
    const { tok } = this.peek();
    if (tok === 'end' || tok === ',') return [''];
    const t = this.next();
    if (t.tok !== 'id') throw new Error(`found '${t.lit}', expected: identifier`);
    return [t.lit];
  }
}

const INT64 = /^[+-]?\d+$/;
function parseInt64(s: string): bigint | undefined {
  if (!INT64.test(s)) return undefined;
  const v = BigInt(s);
  return v >= -(2n ** 63n) && v < 2n ** 63n ? v : undefined;
}

function newRequirement(key: string, op: Op, values: string[]): Requirement {
  const errs: string[] = [];
  if (op === 'gt' || op === 'lt') {
    values.forEach((v, i) => {
      if (parseInt64(v) === undefined) errs.push(invalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
    });
  }
  values.forEach((v, i) => {
    const e = labelValueErrors(v);
    if (e.length) errs.push(invalid(`values[${i}][${key}]`, v, e.join('; ')));
  });
  if (errs.length) throw new Error(aggregate(errs));
  return { key, op, values };
}

function matches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels[r.key]! : undefined;
  switch (r.op) {
    case 'in':
    case '=':
    case '==':
      return has && r.values.includes(value!);
    case 'notin':
    case '!=':
      return !has || !r.values.includes(value!);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      const lv = has ? parseInt64(value!) : undefined;
      const rv = parseInt64(r.values[0]!)!;
      return lv !== undefined && (r.op === 'gt' ? lv > rv : lv < rv);
    }
  }
}

/**
 * A label selector (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-joined: all must
 * hold). The empty selector matches everything. A syntax or validation error is a 400 BadRequest with the API server's text.
 */
export function parseLabelSelector(s: string): LabelMatcher {
  let reqs: Requirement[];
  try {
    reqs = new LabelParser(lex(s)).parse();
  } catch (e) {
    throw badRequest((e as Error).message);
  }
  if (!reqs.length) return () => true;
  return (labels) => reqs.every((r) => matches(r, labels ?? {}));
}

// ---- field selectors (apimachinery/pkg/fields/selector.go and the core/v1 field label conversions) ----

type Obj = Record<string, unknown>;
const get = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Obj)[k] : undefined), o);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const bool = (v: unknown): string => (v === true ? 'true' : 'false');

/** The fields one resource's objects can be selected by, and their values (GetAttrs in the API server's registry). */
interface FieldRules {
  fields: Record<string, (o: unknown) => string>;
  /** Field names that the API server maps to another (pods: spec.host to spec.nodeName). */
  aliases?: Record<string, string>;
  /** Kinds with their own conversion func say "field label not supported"; the rest use the meta/v1 default's words. */
  own: boolean;
}

const name = (o: unknown) => str(get(o, 'metadata', 'name'));
const namespace = (o: unknown) => str(get(o, 'metadata', 'namespace'));
const META = { 'metadata.name': name, 'metadata.namespace': namespace };

const FIELD_RULES: Record<string, FieldRules> = {
  pods: {
    own: true,
    aliases: { 'spec.host': 'spec.nodeName' },
    fields: {
      ...META,
      'spec.nodeName': (o) => str(get(o, 'spec', 'nodeName')),
      'spec.restartPolicy': (o) => str(get(o, 'spec', 'restartPolicy')),
      'spec.schedulerName': (o) => str(get(o, 'spec', 'schedulerName')),
      'spec.serviceAccountName': (o) => str(get(o, 'spec', 'serviceAccountName')),
      'spec.hostNetwork': (o) => bool(get(o, 'spec', 'hostNetwork')),
      'status.phase': (o) => str(get(o, 'status', 'phase')),
      'status.podIP': (o) => {
        const ips = get(o, 'status', 'podIPs');
        return Array.isArray(ips) && ips.length ? str(get(ips[0], 'ip')) : str(get(o, 'status', 'podIP'));
      },
      // Accepted by the conversion but absent from the pod's selectable fields: it compares as "".
      'status.podIPs': () => '',
      'status.nominatedNodeName': (o) => str(get(o, 'status', 'nominatedNodeName')),
    },
  },
  events: {
    own: true,
    fields: {
      ...META,
      ...Object.fromEntries(
        ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].map((f) => [
          `involvedObject.${f}`,
          (o: unknown) => str(get(o, 'involvedObject', f)),
        ]),
      ),
      reason: (o) => str(get(o, 'reason')),
      reportingComponent: (o) => str(get(o, 'reportingComponent')),
      source: (o) => str(get(o, 'source', 'component')) || str(get(o, 'reportingComponent')),
      type: (o) => str(get(o, 'type')),
    },
  },
  secrets: { own: true, fields: { ...META, type: (o) => str(get(o, 'type')) } },
  nodes: { own: true, fields: { 'metadata.name': name, 'spec.unschedulable': (o) => bool(get(o, 'spec', 'unschedulable')) } },
  namespaces: { own: true, fields: { 'metadata.name': name, 'status.phase': (o) => str(get(o, 'status', 'phase')) } },
};
const DEFAULT_RULES: FieldRules = { own: false, fields: META };

/** Terms split at commas that no backslash escapes; the escapes stay in for unescapeValue. */
function splitTerms(s: string): string[] {
  if (!s) return [];
  const terms: string[] = [];
  let start = 0;
  let slash = false;
  for (let i = 0; i < s.length; i++) {
    if (slash) slash = false;
    else if (s[i] === '\\') slash = true;
    else if (s[i] === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/** The first operator in the term splits it; no escaping on the left. */
function splitTerm(term: string): { lhs: string; op: '!=' | '=='; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ['!=', '==', '='] as const) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op: op === '!=' ? '!=' : '==', rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

function unescapeValue(s: string): string {
  let out = '';
  let slash = false;
  for (const c of s) {
    if (slash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw new Error(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      slash = false;
    } else if (c === '\\') slash = true;
    // Go prints the rune with %v: its code point.
    else if (c === ',' || c === '=') throw new Error(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else out += c;
  }
  if (slash) throw new Error('invalid field selector: invalid escape sequence: \\');
  return out;
}

/**
 * A field selector (`f=v`, `f==v`, `f!=v`, comma-joined, values escaped with `\,` `\=` `\\`) over the fields the API server
 * supports for the resource (its plural, e.g. "pods"). Unknown fields and syntax errors are a 400 BadRequest with its text.
 */
export function parseFieldSelector(s: string, resource: string): FieldMatcher {
  const rules = Object.hasOwn(FIELD_RULES, resource) ? FIELD_RULES[resource]! : DEFAULT_RULES;
  const terms: { value: (o: unknown) => string; equal: boolean; want: string }[] = [];
  try {
    const parsed: { lhs: string; op: string; want: string }[] = [];
    // Sorted first, as the API server does: with several unknown fields, it names the first in that order.
    for (const part of splitTerms(s).sort()) {
      if (part === '') continue;
      const t = splitTerm(part);
      if (!t) throw new Error(`invalid selector: '${s}'; can't understand '${part}'`);
      parsed.push({ lhs: t.lhs, op: t.op, want: unescapeValue(t.rhs) });
    }
    for (const { lhs, op, want } of parsed) {
      const field = rules.aliases && Object.hasOwn(rules.aliases, lhs) ? rules.aliases[lhs]! : lhs;
      const value = Object.hasOwn(rules.fields, field) ? rules.fields[field] : undefined;
      if (!value) {
        throw new Error(
          rules.own
            ? `field label not supported: ${lhs}`
            : `${JSON.stringify(lhs)} is not a known field selector: only "metadata.name", "metadata.namespace"`,
        );
      }
      terms.push({ value, equal: op === '==', want });
    }
  } catch (e) {
    throw badRequest((e as Error).message);
  }
  if (!terms.length) return () => true;
  return (obj) => terms.every((t) => (t.value(obj) === t.want) === t.equal);
}
