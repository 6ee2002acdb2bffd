/** Label and field selectors, parsed once per request into predicates over stored objects. */
import { badRequest } from './errors';
import { isObject, KubeObject } from './types';

export type Predicate = (obj: KubeObject) => boolean;

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

/** Split on commas outside parentheses: `env in (a,b),tier!=web` is two requirements. */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function parseRequirement(text: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text);
  if (m) return { key: m[1], op: m[2] as 'in' | 'notin', values: m[3].split(',').map((v) => v.trim()).filter((v) => v !== '') };
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(text);
  if (m) return { key: m[1], op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]] };
  m = /^!\s*([^=!\s]+)$/.exec(text);
  if (m) return { key: m[1], op: '!exists' };
  if (/^[^=!\s()]+$/.test(text)) return { key: text, op: 'exists' };
  throw badRequest(`unable to parse requirement: ${JSON.stringify(text)}`);
}

function matches(req: Requirement, value: string | undefined): boolean {
  switch (req.op) {
    case 'in':
      return value !== undefined && req.values.includes(value);
    case 'notin':
      return value === undefined || !req.values.includes(value);
    case 'exists':
      return value !== undefined;
    case '!exists':
      return value === undefined;
  }
}

export function labelSelector(selector: string | null | undefined): Predicate {
  if (!selector) return () => true;
  const reqs = splitTopLevel(selector).map(parseRequirement);
  return (obj) => reqs.every((r) => matches(r, obj.metadata.labels?.[r.key]));
}

/** A dotted path (`spec.nodeName`, `involvedObject.uid`) read from the object, scalars as strings. */
export function fieldValue(obj: KubeObject, path: string): string | undefined {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  if (cur === undefined || cur === null) return undefined;
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

/**
 * Field selectors accept `=`, `==` and `!=` over any dotted path. The apiserver allows only a few
 * fields per kind; this one answers every path, and an absent field compares as the empty string.
 */
export function fieldSelector(selector: string | null | undefined): Predicate {
  if (!selector) return () => true;
  const reqs = splitTopLevel(selector).map((text) => {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(text);
    if (!m) throw badRequest(`invalid field selector: ${JSON.stringify(text)}`);
    return { path: m[1], negate: m[2] === '!=', value: m[3].trim() };
  });
  return (obj) => reqs.every((r) => ((fieldValue(obj, r.path) ?? '') === r.value) !== r.negate);
}
