import { stringify } from 'yaml';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

export function parseFormat(value: string): OutputFormat {
  if (value === 'table' || value === 'wide' || value === 'json' || value === 'yaml') return value;
  throw new Error(`-o ${value}: expected one of table, wide, json, yaml`);
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  wideOnly?: boolean;
}

/** kubectl-style aligned columns: upper-case headers, three spaces between columns. */
export function renderTable<T>(rows: T[], columns: Column<T>[], wide: boolean, withHeader = true): string {
  const cols = columns.filter((c) => wide || !c.wideOnly);
  const cells = rows.map((r) => cols.map((c) => c.value(r)));
  const widths = cols.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i])))
      .join('   ')
      .trimEnd();
  const out = cells.map(line);
  if (withHeader) out.unshift(line(cols.map((c) => c.header)));
  return out.join('\n');
}

/** Lists print as `{kind: List, items}` in json/yaml, like kubectl. */
export function renderStructured(items: unknown[], format: 'json' | 'yaml', single: boolean): string {
  const doc = single ? items[0] : { kind: 'List', items };
  return format === 'json' ? JSON.stringify(doc, null, 2) : stringify(doc).trimEnd();
}

export function mib(value: number | undefined): string {
  if (value === undefined) return '-';
  if (value >= 1024 * 1024) return `${+(value / 1024 / 1024).toFixed(1)}Ti`;
  if (value >= 1024) return `${+(value / 1024).toFixed(1)}Gi`;
  return `${value}Mi`;
}

export function age(since: Date | undefined, now = Date.now()): string {
  if (!since) return '-';
  const s = Math.max(0, Math.floor((now - since.getTime()) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** " (Starting)" after a created object, or nothing while no controller has given it a phase yet. */
export function phaseSuffix(phase: string): string {
  return phase === 'Unknown' ? '' : ` (${phase})`;
}
