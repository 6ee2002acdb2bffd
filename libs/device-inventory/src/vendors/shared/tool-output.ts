/**
 * Helpers shared by the vendor-tool parsers: one error type that names the tool and the line,
 * and the rules for values a tool prints when it has no reading.
 */

/** A vendor tool printed something its parser does not understand. */
export class ToolOutputError extends Error {
  override readonly name = 'ToolOutputError';

  constructor(
    /** The command whose output was being read, e.g. `nvidia-smi topo -m`. */
    readonly tool: string,
    /** What was wrong, in words an operator can act on. */
    readonly problem: string,
    /** 1-based line of the output the problem was found on, when there is one. */
    readonly line?: number,
  ) {
    super(line === undefined ? `${tool}: ${problem}` : `${tool}: line ${line}: ${problem}`);
  }
}

/**
 * Placeholders the vendor tools print in place of a value: `[N/A]`, `N/A`, `NA`, `-`,
 * `[Not Supported]`, `[Unknown Error]`, `[Insufficient Permissions]`, `[GPU requires reset]`...
 * Any bracketed text is such a placeholder in nvidia-smi's CSV; a reading is never bracketed.
 */
const ABSENT_VALUE = /^(\[[^\]]*\]|n\/a|na|-|not supported|unknown|unknown error|insufficient permissions)$/i;

/** True when `raw` says "no reading" rather than carrying one; such a value becomes absent, never 0. */
export function isAbsentValue(raw: string | undefined): boolean {
  if (raw === undefined) return true;
  const value = raw.trim();
  return value === '' || ABSENT_VALUE.test(value);
}

/** The text value, or undefined when the tool printed a placeholder. */
export function presentText(raw: string | undefined): string | undefined {
  return isAbsentValue(raw) ? undefined : (raw as string).trim();
}

/**
 * Reads a number that may carry a unit suffix (`81559 MiB`, `700.00 W`, `0 %`, `36C`).
 * Undefined for a placeholder; NaN when something else stands there, so the caller can
 * report the line.
 */
export function measuredNumber(raw: string | undefined): number | undefined {
  const value = presentText(raw);
  if (value === undefined) return undefined;
  const match = /^([-+]?\d+(?:\.\d+)?)\s*[A-Za-z%°/]*$/.exec(value);
  return match ? Number(match[1]) : Number.NaN;
}

/** Splits tool output into lines, dropping the carriage returns some terminals add. */
export function outputLines(text: string): string[] {
  return text.replace(/\r/g, '').split('\n');
}

/**
 * PCI address in the form sysfs uses (`0000:1b:00.0`), so addresses from vendor tools compare
 * with those of NICs and of /sys/bus/pci. nvidia-smi prints an 8-digit domain (`00000000:1B:00.0`).
 */
export function sysfsPciAddress(raw: string | undefined): string | undefined {
  const value = presentText(raw);
  if (value === undefined) return undefined;
  const match = /^(?:([0-9a-f]+):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i.exec(value);
  if (!match) return value.toLowerCase();
  const domain = (match[1] ?? '0').slice(-4).padStart(4, '0');
  return `${domain}:${match[2].padStart(2, '0')}:${match[3].padStart(2, '0')}.${match[4]}`.toLowerCase();
}

/** Sets an optional property only when it has a value, so absent readings stay absent keys. */
export function setIfPresent<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined) target[key] = value;
}
