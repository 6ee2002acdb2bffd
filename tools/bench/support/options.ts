/**
 * A benchmark's `--name value` options, all positive integers: `defaults` gives the names (in
 * camelCase; the flag is its kebab-case, `baselineUpdates` → `--baseline-updates`) and values.
 * An unknown flag or a value that is not a positive integer is refused, naming the flags there are.
 */
export function positiveIntOptions<T extends Record<string, number>>(args: string[], defaults: T): T {
  const flagOf = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  const keyByFlag = new Map(Object.keys(defaults).map((key) => [flagOf(key), key]));
  const options: Record<string, number> = { ...defaults };
  for (let i = 0; i < args.length; i += 2) {
    const value = Number(args[i + 1]);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`${args[i]} needs a positive integer, got ${args[i + 1]}`);
    const key = keyByFlag.get(args[i]);
    if (key === undefined) throw new Error(`unknown option ${args[i]} (${[...keyByFlag.keys()].join(', ')})`);
    options[key] = value;
  }
  return options as T;
}
