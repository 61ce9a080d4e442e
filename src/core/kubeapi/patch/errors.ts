/**
 * The errors of the API server's patch handlers, with its codes, reasons and words. Messages that quote a patch
 * print its values as Go's %v does (map[k:v], [a b], <nil>), so that kubectl shows what it shows against a cluster.
 */
import { KubeStatusError } from '../status.js';

/** errors.NewBadRequest. */
export function badRequest(message: string): KubeStatusError {
  return new KubeStatusError(400, 'BadRequest', message);
}

/** errors.NewGenericServerResponse(422, …): the patch's own words are dropped for the generic ones. */
export function unprocessable(): KubeStatusError {
  return new KubeStatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {});
}

/**
 * An error that is no metav1.Status (the strategic merge patch's own fmt.Errorf): the API server answers it as a
 * 500 with an empty (Unknown) reason and the error's text, which kubectl prints as `Error from server: <text>`.
 */
export function unknownError(message: string): KubeStatusError {
  return new KubeStatusError(500, '', message);
}

/** errors.NewRequestEntityTooLargeError. */
export function tooLarge(message: string): KubeStatusError {
  return new KubeStatusError(413, 'RequestEntityTooLarge', `Request entity too large: ${message}`);
}

/** Go's %v of a decoded JSON value. */
export function goFormat(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return '[' + v.map(goFormat).join(' ') + ']';
  if (typeof v === 'object') {
    const m = v as Record<string, unknown>;
    return (
      'map[' +
      Object.keys(m)
        .sort()
        .map((k) => `${k}:${goFormat(m[k])}`)
        .join(' ') +
      ']'
    );
  }
  if (typeof v === 'number') return goNumber(v);
  return String(v);
}

/** Integers decode as int64 (the API server keeps them); others as float64, which %v prints as %g does. */
function goNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 63) return BigInt(n).toString();
  if (!Number.isFinite(n)) return String(n);
  const [mantissa, e] = n.toExponential().split('e');
  const exp = Number(e);
  if (exp < -4 || exp >= 21) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(n);
}

/** Go's reflect.TypeOf of a decoded JSON value, as the merge errors name it. */
export function goType(v: unknown): string {
  if (v === null || v === undefined) return '%!s(<nil>)';
  if (Array.isArray(v)) return '[]interface {}';
  if (typeof v === 'object') return 'map[string]interface {}';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64';
  return typeof v === 'boolean' ? 'bool' : 'string';
}

/** %s of a value that may not be a string. */
export function goString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '%!s(<nil>)';
  return `%!s(${goType(v)}=${goFormat(v)})`;
}

/** The words of Go's encoding/json for a body JSON.parse refused (V8 says where; Go says what it was looking for). */
export function goJsonSyntaxError(err: unknown, body: string): string {
  const text = err instanceof Error ? err.message : String(err);
  const at = /at position (\d+)/.exec(text);
  let pos = at ? Number(at[1]) : -1;
  if (pos < 0) {
    const token = /Unexpected token '(.)'/.exec(text);
    if (token) pos = body.indexOf(token[1]);
  }
  if (/unexpected end/i.test(text) || pos < 0 || pos >= body.length) return 'unexpected end of JSON input';
  const c = body[pos];
  const ch = c === "'" ? "'\\''" : c === '"' ? `'"'` : `'${JSON.stringify(c).slice(1, -1)}'`;
  if (/Expected property name/.test(text)) return `invalid character ${ch} looking for beginning of object key string`;
  if (/after property name/.test(text)) return `invalid character ${ch} after object key`;
  if (/after property value/.test(text)) return `invalid character ${ch} after object key:value pair`;
  if (/after array element/.test(text)) return `invalid character ${ch} after array element`;
  if (/after JSON/.test(text)) return `invalid character ${ch} after top-level value`;
  return `invalid character ${ch} looking for beginning of value`;
}

/** Go's JSON type name of a value, as "json: cannot unmarshal <it> into Go value of type …" says it. */
export function goJsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}
