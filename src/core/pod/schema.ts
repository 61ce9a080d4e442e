import { distance } from 'fastest-levenshtein';
import { ConfigMap as ConfigMapModel } from 'kubernetes-models/v1/ConfigMap';
import { Pod as PodModel } from 'kubernetes-models/v1/Pod';
import { Secret as SecretModel } from 'kubernetes-models/v1/Secret';
import { FIELD_ROOTS, FIELD_TYPES } from '../../generated/pod/fields.js';

/** A problem within one document: the loader adds file and document. */
export interface FieldProblem {
  field: string;
  message: string;
  severity: 'error' | 'warning';
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** /spec/containers/0/name -> spec.containers[0].name */
export function jsonPointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

/** The value at a JSON pointer of the document. */
function valueAt(doc: unknown, pointer: string): unknown {
  let v = doc;
  for (const raw of pointer.split('/').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return v;
}

/** Why YAML gave a boolean or a number where a string belongs, and the fix. */
function unquotedHint(expected: unknown, actual: unknown): string {
  if (expected !== 'string') return '';
  if (typeof actual === 'boolean')
    return `, got the boolean ${actual} (YAML reads unquoted yes, no, on, off, true and false as booleans: quote the value)`;
  if (typeof actual === 'number') return `, got the number ${actual} (quote the value to keep it a string)`;
  return '';
}

function ajvMessage(e: AjvError, doc: unknown): { field: string; message: string } {
  const field = jsonPointerToPath(e.instancePath);
  switch (e.keyword) {
    case 'required': {
      const missing = String(e.params.missingProperty);
      return { field: field ? `${field}.${missing}` : missing, message: 'required field is missing' };
    }
    case 'type': {
      const value = valueAt(doc, e.instancePath);
      const got = unquotedHint(e.params.type, value) || `, got ${shown(value)}`;
      const listHint = e.params.type === 'array' && !Array.isArray(value) ? ' (a YAML list: one "- item" a line, or [a, b])' : '';
      return { field, message: `expected ${typeWord(e.params.type)}${got}${listHint}` };
    }
    case 'enum':
      return { field, message: `expected one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'format':
      if (e.params.format === 'byte') return { field, message: 'expected a base64-encoded value (use stringData for plain text)' };
      return { field, message: `expected ${String(e.params.format)} format` };
    default:
      return { field, message: `expected a value that ${e.message ?? 'matches the schema'}` };
  }
}

/** A JSON schema type as a manifest's author reads it: YAML has lists and mappings. */
function typeWord(type: unknown): string {
  if (type === 'integer') return 'an integer';
  if (type === 'array') return 'a list';
  if (type === 'object') return 'a mapping (key: value)';
  return `a ${String(type)}`;
}

/** One alternative of a oneOf that the value matched none of: "a number", "a string in quantity format". */
function alternative(e: AjvError): string | undefined {
  if (e.keyword === 'type') return typeWord(e.params.type);
  if (e.keyword === 'format')
    return e.params.format === 'quantity' ? 'a quantity (e.g. 500m, 1, 128Mi)' : `a string in ${String(e.params.format)} format`;
  return undefined;
}

/** The value a problem is about, as the message quotes it. */
function shown(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
  return JSON.stringify(value) ?? String(value);
}

/**
 * ajv reports a value that matches no alternative of a oneOf (a Quantity, an IntOrString) as each
 * alternative's failure, then the oneOf's: one problem, naming the alternatives and the value.
 */
function collapseAlternatives(errors: AjvError[], doc: unknown): { field: string; message: string }[] {
  const failedOneOf = new Set(errors.filter((e) => e.keyword === 'oneOf' && e.params.passingSchemas == null).map((e) => e.instancePath));
  const alternatives = new Map<string, string[]>();
  for (const e of errors) {
    const alt = failedOneOf.has(e.instancePath) ? alternative(e) : undefined;
    if (alt === undefined) continue;
    const list = alternatives.get(e.instancePath) ?? [];
    if (!list.includes(alt)) list.push(alt);
    alternatives.set(e.instancePath, list);
  }
  return errors.flatMap((e) => {
    const alts = alternatives.get(e.instancePath);
    if (!alts?.length) return [ajvMessage(e, doc)];
    if (e.keyword !== 'oneOf') return [];
    return [
      { field: jsonPointerToPath(e.instancePath), message: `expected ${alts.join(' or ')}, got ${shown(valueAt(doc, e.instancePath))}` },
    ];
  });
}

/** Schema validation with kubernetes-models (the Kubernetes OpenAPI schema). */
export function schemaProblems(kind: string, doc: Record<string, unknown>): FieldProblem[] {
  const Model = kind === 'Pod' ? PodModel : kind === 'ConfigMap' ? ConfigMapModel : SecretModel;
  try {
    // The models' constructors only copy fields; validate() runs the compiled schema.
    new (Model as unknown as new (d: unknown) => { validate(): void })(doc).validate();
    return [];
  } catch (err) {
    const errors = (err as { errors?: AjvError[] }).errors;
    if (!Array.isArray(errors)) return [{ field: '', message: `schema validation failed: ${(err as Error).message}`, severity: 'error' }];
    const seen = new Set<string>();
    return collapseAlternatives(errors, doc)
      .filter((p) => !seen.has(`${p.field}|${p.message}`) && seen.add(`${p.field}|${p.message}`))
      .map((p) => ({ ...p, severity: 'error' as const }));
  }
}

/**
 * The one field of the type a typo most likely meant (comand: command, limit: limits): at most 1 edit away for a
 * name of up to 7 letters, 2 for a longer one, and no other field as near.
 */
function nearest(lower: string, fields: string[]): string | undefined {
  const most = lower.length > 7 ? 2 : 1;
  const scored = fields.map((f) => ({ f, d: distance(lower, f.toLowerCase()) })).filter((x) => x.d <= most);
  const best = Math.min(...scored.map((x) => x.d));
  const at = scored.filter((x) => x.d === best);
  return at.length === 1 ? at[0]!.f : undefined;
}

/** What an unknown field was likely meant to be: another case, its place one level off, or a typo of a field here. */
function suggestion(typeName: string, field: string): string | undefined {
  const here = Object.keys(FIELD_TYPES[typeName] ?? {});
  const lower = field.toLowerCase();
  const cased = here.find((f) => f.toLowerCase() === lower);
  if (cased) return `did you mean ${cased}?`;
  // A name spelled right one level off is misplaced rather than mistyped.
  if (typeName === 'IObjectMeta' && FIELD_TYPES.IPodSpec?.[field] !== undefined) return `${field} belongs in spec`;
  if (typeName === 'IPodSpec' && FIELD_TYPES.IObjectMeta?.[field] !== undefined) return `${field} belongs in metadata`;
  if (typeName === 'IPod' && FIELD_TYPES.IPodSpec?.[field] !== undefined) return `${field} belongs in spec`;
  if (typeName === 'IPod' && FIELD_TYPES.IObjectMeta?.[field] !== undefined) return `${field} belongs in metadata`;
  if (typeName === 'IPodSpec' && FIELD_TYPES.IContainer?.[field] !== undefined) return `${field} belongs in each container`;
  const near = nearest(lower, here);
  return near ? `did you mean ${near}?` : undefined;
}

/** One field met by walkSchema: its key, value and path, the type that holds it, and whether the schema knows it. */
export interface SchemaField {
  key: string;
  value: unknown;
  path: string;
  typeName: string;
  known: boolean;
}

/**
 * Walks a document along the Kubernetes schema from a kind's root type (lists element by element, at
 * most 64 levels deep); visit says of each field whether to walk into it.
 */
export function walkSchema(doc: unknown, kind: string, visit: (f: SchemaField) => boolean): void {
  const walk = (value: unknown, typeName: string | null, path: string, depth: number) => {
    if (typeName === null || typeName === '*' || value === null || typeof value !== 'object' || depth > 64) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, typeName, `${path}[${i}]`, depth + 1));
      return;
    }
    const fields = FIELD_TYPES[typeName];
    if (!fields) return;
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const child = path ? `${path}.${key}` : key;
      const known = key in fields;
      if (visit({ key, value: v, path: child, typeName, known }) && known) walk(v, fields[key] ?? null, child, depth + 1);
    }
  };
  walk(doc, FIELD_ROOTS[kind] ?? null, '', 0);
}

/** Every field the Kubernetes schema does not know, with its path (kubectl --validate=strict). */
export function unknownFields(kind: string, doc: unknown): { field: string; hint?: string }[] {
  const out: { field: string; hint?: string }[] = [];
  walkSchema(doc, kind, (f) => {
    if (!f.known) out.push({ field: f.path, hint: suggestion(f.typeName, f.key) });
    return f.known;
  });
  return out;
}

/** Elements of a list may be anything in a bad manifest; the schema reports them. */
export const isObject = (v: unknown): v is object => v !== null && typeof v === 'object' && !Array.isArray(v);
