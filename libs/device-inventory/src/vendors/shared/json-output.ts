import { ToolOutputError, outputLines } from './tool-output';

/** A JSON object as vendor tools print it: nothing about its shape is trusted. */
export type JsonObject = { readonly [key: string]: unknown };

/**
 * Parses the JSON a tool printed. Lines before the document are skipped because amd-smi and
 * rocm-smi print warnings (missing `render` group, driver notices) ahead of it on stdout.
 */
export function toolJson(tool: string, text: string): unknown {
  const lines = outputLines(text);
  const startAt = lines.findIndex((line) => /^\s*[[{]/.test(line));
  if (startAt < 0) throw new ToolOutputError(tool, 'no JSON document in the output');
  const document = lines.slice(startAt).join('\n');
  try {
    return JSON.parse(document);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    // V8 reports a character offset; turn it into the line of the output it falls on.
    const offset = /at position (\d+)/.exec(reason)?.[1];
    const linesBefore = offset === undefined ? 0 : document.slice(0, Number(offset)).split('\n').length - 1;
    throw new ToolOutputError(tool, `not valid JSON: ${reason}`, startAt + 1 + linesBefore);
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at a path of keys, or undefined when any step is missing or not an object. */
export function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (!isJsonObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

/** The entry whose key matches case-insensitively: rocm-smi has printed both "Card series" and "Card Series". */
export function entryIgnoringCase(object: JsonObject, key: string): unknown {
  const wanted = key.toLowerCase();
  const found = Object.keys(object).find((candidate) => candidate.toLowerCase() === wanted);
  return found === undefined ? undefined : object[found];
}

/** A string or number as text; anything else undefined. */
export function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}
