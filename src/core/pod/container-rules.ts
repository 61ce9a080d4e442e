import type { IContainer } from 'kubernetes-models/v1';
import { parseQuantity } from '../util/quantity.js';
import { checkFieldRef, checkResourceFieldRef, ENV_FIELD_PATHS } from './field-refs.js';
import { isObject } from './schema.js';

/**
 * Linux's MAX_ARG_STRLEN (32 pages of 4 KiB): execve refuses any one NAME=value string longer than this
 * with E2BIG, so a bigger env value could only fail at container start, after a sandbox exists.
 */
export const MAX_ENV_STRING_BYTES = 128 * 1024;

/** Linux's MAX_ARG_STRLEN, for one argument as for one environment string (with its NUL). */
export const MAX_ARG_STRLEN = MAX_ENV_STRING_BYTES;

/**
 * Linux's ARG_MAX at the default 8 MiB stack (a quarter of RLIMIT_STACK, what getconf ARG_MAX says there): what
 * execve takes of argv and envp together, each string with its NUL and its pointer. A fixed number, not this
 * host's: a manifest valid here is valid on the next host, and the container's stack limit is not this process's.
 */
export const ARG_MAX_BYTES = 2 * 1024 * 1024;
const POINTER_BYTES = 8;

/**
 * What execve would be handed for a container's command and args (or an exec handler's command) with its env,
 * refused here when Linux would refuse it: one string over MAX_ARG_STRLEN, or all of them over ARG_MAX. The
 * container would otherwise crash-loop with "argument list too long" after its sandbox is up. Counted: what the
 * manifest says (literal env values, each valueFrom as its name alone); the image's entrypoint and env and
 * $(VAR) expansion are not known here.
 */
export function checkExecSize(
  c: IContainer,
  fields: string[],
  path: string,
  err: (field: string, message: string) => void,
  from: Record<string, unknown> = c as unknown as Record<string, unknown>,
): void {
  const parts: { field: string; bytes: number }[] = [];
  for (const field of fields) {
    const list = from[field.slice(field.lastIndexOf('.') + 1)];
    if (!Array.isArray(list)) continue;
    let bytes = 0;
    list.forEach((arg: unknown, i: number) => {
      if (typeof arg !== 'string') return;
      const size = Buffer.byteLength(arg) + 1;
      if (size > MAX_ARG_STRLEN)
        err(
          `${field}[${i}]`,
          `too long: ${size} bytes with its NUL; expected at most ${MAX_ARG_STRLEN} bytes ` +
            `(Linux MAX_ARG_STRLEN: exec refuses a longer argument with "argument list too long")`,
        );
      bytes += size + POINTER_BYTES;
    });
    parts.push({ field, bytes });
  }
  if (parts.length === 0) return;
  let env = 0;
  for (const e of Array.isArray(c.env) ? (c.env as unknown[]) : []) {
    if (!isObject(e)) continue;
    const { name, value } = e as { name?: unknown; value?: unknown };
    env +=
      (typeof name === 'string' ? Buffer.byteLength(name) : 0) +
      (typeof value === 'string' ? Buffer.byteLength(value) : 0) +
      2 +
      POINTER_BYTES;
  }
  parts.push({ field: `${path}.env`, bytes: env });
  const total = parts.reduce((sum, p) => sum + p.bytes, 0);
  if (total <= ARG_MAX_BYTES) return;
  const largest = parts.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const said = parts
    .filter((p) => p.bytes > 0)
    .map((p) => `${p.field.slice(path.length + 1)} ${p.bytes}`)
    .join(', ');
  err(
    largest.field,
    `too long for exec: ${total} bytes of arguments and environment together (${said}; each string with its NUL and ` +
      `pointer); expected at most ${ARG_MAX_BYTES} bytes ` +
      '(Linux ARG_MAX at the default 8 MiB stack: exec fails with "argument list too long")',
  );
}

/** The API server's ValidateResourceRequirements: quantities, none negative, requests never above limits. */
export function checkResources(c: IContainer, path: string, err: (field: string, message: string) => void): void {
  const r = c.resources as Record<string, unknown> | undefined;
  if (!isObject(r)) return;
  const parsed: Record<'limits' | 'requests', Map<string, number>> = { limits: new Map(), requests: new Map() };
  for (const kind of ['limits', 'requests'] as const) {
    const list = r[kind];
    if (!isObject(list)) continue;
    for (const [name, raw] of Object.entries(list as Record<string, unknown>)) {
      if (typeof raw !== 'string' && typeof raw !== 'number') continue;
      const field = `${path}.resources.${kind}[${JSON.stringify(name)}]`;
      const value = parseQuantity(raw);
      if (value === undefined) err(field, `${JSON.stringify(raw)} is not a quantity; expected e.g. 500m, 1, 128Mi`);
      else if (value < 0) err(field, `${JSON.stringify(raw)} is invalid; must be greater than or equal to 0`);
      else parsed[kind].set(name, value);
    }
  }
  for (const [name, request] of parsed.requests) {
    const limit = parsed.limits.get(name);
    if (limit !== undefined && request > limit) {
      const raw = (r.limits as Record<string, unknown>)[name];
      err(`${path}.resources.requests[${JSON.stringify(name)}]`, `must be less than or equal to ${name} limit of ${String(raw)}`);
    }
  }
}

/** The API server's relaxed env var names (printable ASCII but '='), values an exec can take, and the fields a valueFrom reads. */
export function checkEnv(c: IContainer, path: string, err: (field: string, message: string) => void): void {
  (Array.isArray(c.env) ? c.env : []).forEach((e: unknown, j: number) => {
    if (!isObject(e)) return;
    const { name, value, valueFrom } = e as { name?: unknown; value?: unknown; valueFrom?: unknown };
    const at = `${path}.env[${j}]`;
    if (isObject(valueFrom)) {
      checkFieldRef((valueFrom as { fieldRef?: unknown }).fieldRef, `${at}.valueFrom.fieldRef`, ENV_FIELD_PATHS, err);
      checkResourceFieldRef((valueFrom as { resourceFieldRef?: unknown }).resourceFieldRef, `${at}.valueFrom.resourceFieldRef`, false, err);
    }
    if (typeof name === 'string' && (name === '' || !/^[\x20-\x3c\x3e-\x7e]+$/.test(name))) {
      err(
        `${at}.name`,
        `${JSON.stringify(name)} is invalid; a valid environment variable ` +
          `name must consist only of printable ASCII characters other than '='`,
      );
    }
    if (typeof value !== 'string') return;
    if (value.includes('\0'))
      err(`${at}.value`, 'must not contain a NUL byte (a C string ends there: the process would see a different value)');
    const size = Buffer.byteLength(value) + (typeof name === 'string' ? Buffer.byteLength(name) : 0) + 2;
    if (size > MAX_ENV_STRING_BYTES) {
      err(
        `${at}.value`,
        `too long: NAME=value is ${size} bytes; expected at most ${MAX_ENV_STRING_BYTES} bytes ` +
          `(Linux MAX_ARG_STRLEN: exec refuses a longer environment string)`,
      );
    }
  });
}

const IMAGE_REF =
  /^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$/;

/** The docker reference grammar (distribution/reference). */
export function isImageReference(image: string): boolean {
  return image.length <= 255 && IMAGE_REF.test(image);
}
