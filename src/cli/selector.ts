import { PodctlError } from '../core/errors.js';
import { isLabelValue, qualifiedNameProblem } from '../core/pod/names.js';

/** One requirement of a label selector, as kubectl's -l reads it. */
export interface Requirement {
  key: string;
  op: 'exists' | '!' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';
  values: string[];
}

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s*\((.*)\)$`);
const EQUALITY = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(.*)$`);
const ORDER = new RegExp(String.raw`^(${KEY})\s*([<>])\s*(.*)$`);

/** The parts between top-level commas: a set's values keep theirs. */
function split(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

/**
 * A label selector as the API's labels.Parse reads one: requirements joined by commas, each
 * `key`, `!key`, `key=value` (or ==), `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>1`, `key<1`.
 */
export function parseSelector(text: string): Requirement[] {
  const bad = (why: string) =>
    new PodctlError(`invalid --selector ${JSON.stringify(text)}: ${why}`, {
      exitCode: 2,
      hint: "e.g. -l app=web, -l 'tier in (front,back),!canary'",
    });
  if (text.trim() === '') return [];
  return split(text).map((part): Requirement => {
    let req: Requirement | undefined;
    let m: RegExpExecArray | null;
    if ((m = /^!\s*(.+)$/.exec(part))) req = { key: m[1]!, op: '!', values: [] };
    else if ((m = SET.exec(part))) req = { key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()) };
    else if ((m = EQUALITY.exec(part))) req = { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', values: [m[3]!.trim()] };
    else if ((m = ORDER.exec(part))) req = { key: m[1]!, op: m[2] === '>' ? 'gt' : 'lt', values: [m[3]!.trim()] };
    else if (part !== '') req = { key: part, op: 'exists', values: [] };
    if (!req) throw bad('an empty requirement');
    const keyProblem = qualifiedNameProblem(req.key);
    if (keyProblem) throw bad(`${JSON.stringify(req.key)} is not a label key: ${keyProblem}`);
    if ((req.op === 'in' || req.op === 'notin') && req.values.every((v) => v === ''))
      throw bad(`${req.key} ${req.op} (): the set of values is empty`);
    if (req.op === 'gt' || req.op === 'lt') {
      if (!/^-?\d+$/.test(req.values[0]!)) throw bad(`${req.key}${req.op === 'gt' ? '>' : '<'}${req.values[0]}: expected an integer`);
    } else {
      for (const v of req.values) if (!isLabelValue(v)) throw bad(`${JSON.stringify(v)} is not a label value`);
    }
    return req;
  });
}

/** Whether labels satisfy every requirement (an empty selector selects everything). */
export function selects(selector: Requirement[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return selector.every(({ key, op, values }) => {
    const has = Object.hasOwn(l, key);
    switch (op) {
      case 'exists':
        return has;
      case '!':
        return !has;
      case '=':
      case 'in':
        return has && values.includes(l[key]!);
      case '!=':
      case 'notin':
        return !has || !values.includes(l[key]!);
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(l[key]!)) return false;
        const n = Number(l[key]);
        return op === 'gt' ? n > Number(values[0]) : n < Number(values[0]);
      }
    }
  });
}

/** -l as a test of a pod's labels: parsed once, refused before anything is read when it is not a selector. */
export function labelFilter(text: string): (labels: Record<string, string> | undefined) => boolean {
  const selector = parseSelector(text);
  return (labels) => selects(selector, labels);
}
