// Reads the Dockerfiles and the .dockerignore of this repository: enough of both formats for what
// the images use (stages, ENV, COPY with --from and globs, exec-form CMD/ENTRYPOINT/HEALTHCHECK,
// .dockerignore exceptions), so that a spec can check what each runtime stage holds and
// tools/images/check-image.ts can replay the stages without a Docker daemon.
import { readdirSync, readFileSync } from 'fs';
import { join } from 'path';

export interface Instruction {
  /** 1-based line of the instruction's first line. */
  readonly line: number;
  /** Upper case: FROM, RUN, COPY, … */
  readonly keyword: string;
  /** Leading `--name=value` options (`--from`, `--mount`, `--interval`, …). */
  readonly flags: Readonly<Record<string, string>>;
  /**
   * Exec form (`["node", "-e", …]`): the array. Shell form of RUN, CMD, ENTRYPOINT: one element,
   * the command line. Anything else: its words, quotes removed.
   */
  readonly args: readonly string[];
  /** Whether args came from a JSON array. */
  readonly exec: boolean;
}

export interface Stage {
  /** The `AS` name, else the stage's index. */
  readonly name: string;
  /** The base image or earlier stage, global ARGs substituted. */
  readonly from: string;
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** Global ARGs (before the first FROM) and their defaults. */
  readonly args: Readonly<Record<string, string>>;
  readonly stages: readonly Stage[];
}

/** Splits words like a shell does for Dockerfile arguments: whitespace outside quotes separates. */
export function words(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: '"' | "'" | undefined;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < text.length) current += text[++i];
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < text.length) {
      current += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(current);
      current = '';
      inWord = false;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unterminated ${quote} in: ${text}`);
  if (inWord) out.push(current);
  return out;
}

function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? whole);
}

/** Leading `--name=value` options of an instruction's text, and the rest. */
function takeFlags(text: string): { flags: Record<string, string>; rest: string } {
  const flags: Record<string, string> = {};
  let rest = text;
  for (let m = /^--([\w-]+)=(\S+)\s*/.exec(rest); m; m = /^--([\w-]+)=(\S+)\s*/.exec(rest)) {
    flags[m[1]] = m[2];
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

function execForm(text: string): string[] | undefined {
  if (!text.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? (parsed as string[]) : undefined;
  } catch {
    return undefined; // Docker runs an unparsable array as a shell command
  }
}

const SHELL_FORM = new Set(['RUN', 'CMD', 'ENTRYPOINT']);

/** Parses a Dockerfile; throws naming the line it cannot read. */
export function parseDockerfile(text: string, file = 'Dockerfile'): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Array<{ name: string; from: string; instructions: Instruction[] }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    if (/^\s*(#|$)/.test(lines[i])) continue;
    // A trailing backslash continues the instruction; comment lines inside it are dropped.
    let joined = lines[i].trimEnd();
    while (joined.endsWith('\\')) {
      joined = joined.slice(0, -1);
      i++;
      while (i < lines.length && /^\s*#/.test(lines[i])) i++;
      if (i >= lines.length) break;
      joined += ' ' + lines[i].trim();
    }
    const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(joined);
    if (!m) throw new Error(`${file}:${start}: not an instruction: ${joined.trim()}`);
    const keyword = m[1].toUpperCase();
    const { flags, rest } = takeFlags(m[2].trim());
    if (keyword === 'FROM') {
      const [image, as, name] = words(rest);
      if (!image || (as !== undefined && (as.toUpperCase() !== 'AS' || !name))) throw new Error(`${file}:${start}: FROM <image> [AS <name>] expected`);
      stages.push({ name: name ?? String(stages.length), from: substitute(image, globalArgs), instructions: [] });
      continue;
    }
    if (keyword === 'ARG' && stages.length === 0) {
      for (const word of words(rest)) {
        const eq = word.indexOf('=');
        globalArgs[eq < 0 ? word : word.slice(0, eq)] = eq < 0 ? '' : word.slice(eq + 1);
      }
      continue;
    }
    const stage = stages[stages.length - 1];
    if (!stage) throw new Error(`${file}:${start}: ${keyword} before the first FROM`);
    let body = rest;
    if (keyword === 'HEALTHCHECK') {
      const hc = /^(CMD|NONE)\b\s*(.*)$/i.exec(rest);
      if (!hc) throw new Error(`${file}:${start}: HEALTHCHECK [options] CMD … expected`);
      body = hc[1].toUpperCase() === 'NONE' ? '' : hc[2];
    }
    const exec = execForm(body);
    const args = exec ?? (SHELL_FORM.has(keyword) || keyword === 'HEALTHCHECK' ? [body] : words(body));
    stage.instructions.push({ line: start, keyword, flags, args, exec: exec !== undefined });
  }
  return { args: globalArgs, stages };
}

export function readDockerfile(path: string): Dockerfile {
  return parseDockerfile(readFileSync(path, 'utf8'), path);
}

/** The stage's instructions of one kind. */
export function instructions(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

/** The variables one ENV instruction sets (both `K=V …` and the old `K V` form). */
export function envOf(env: Instruction): Record<string, string> {
  const { args } = env;
  if (args.length >= 1 && !args[0].includes('=')) return { [args[0]]: args.slice(1).join(' ') };
  const out: Record<string, string> = {};
  for (const word of args) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`line ${env.line}: ENV ${args.join(' ')}: ${word} is not K=V`);
    out[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return out;
}

/** ENV of a stage, later instructions winning. */
export function stageEnv(stage: Stage): Record<string, string> {
  return Object.assign({}, ...instructions(stage, 'ENV').map(envOf)) as Record<string, string>;
}

/** The last USER of a stage; undefined when it sets none (root). */
export function stageUser(stage: Stage): string | undefined {
  return instructions(stage, 'USER').at(-1)?.args[0];
}

/** What a container of this stage runs: ENTRYPOINT then CMD, each the last of its kind. */
export function stageCommand(stage: Stage): { entrypoint: readonly string[]; cmd: readonly string[]; exec: boolean } {
  const entrypoint = instructions(stage, 'ENTRYPOINT').at(-1);
  const cmd = instructions(stage, 'CMD').at(-1);
  return { entrypoint: entrypoint?.args ?? [], cmd: cmd?.args ?? [], exec: (entrypoint?.exec ?? true) && (cmd?.exec ?? true) };
}

/** A COPY's sources and destination. */
export function copyOf(copy: Instruction): { from: string | undefined; sources: string[]; dest: string } {
  if (copy.args.length < 2) throw new Error(`line ${copy.line}: COPY <src>… <dest> expected`);
  return { from: copy.flags.from, sources: copy.args.slice(0, -1), dest: copy.args[copy.args.length - 1] };
}

// ---- .dockerignore

export interface IgnoreRule {
  readonly pattern: string;
  /** A `!` line: re-includes what earlier lines excluded. */
  readonly exception: boolean;
  readonly regex: RegExp;
}

/** A glob of Go's filepath.Match plus `**` (any number of directories) as a regular expression. */
export function globRegex(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) throw new Error(`unterminated [ in ${glob}`);
      re += '[' + glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '\\' && i + 1 < glob.length) re += '\\' + glob[++i];
    else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** A .dockerignore as rules (comments and blank lines dropped, paths cleaned). */
export function parseDockerignore(text: string): IgnoreRule[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const exception = line.startsWith('!');
      const pattern = (exception ? line.slice(1).trim() : line).replace(/^(\.?\/)+/, '').replace(/\/+$/, '');
      return { pattern, exception, regex: globRegex(pattern) };
    });
}

/**
 * Whether the build context leaves `path` (relative, `/`-separated) out. As Docker does: the last
 * rule that matches the path or one of its parent directories decides.
 */
export function isIgnored(path: string, rules: readonly IgnoreRule[]): boolean {
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) if (prefixes.some((p) => rule.regex.test(p))) ignored = !rule.exception;
  return ignored;
}

/**
 * Every file of the build context rooted at `root` (relative paths, sorted). An ignored directory
 * is skipped unless an exception could re-include something under it, as Docker does.
 */
export function contextFiles(root: string, rules: readonly IgnoreRule[]): string[] {
  const exceptions = rules.filter((r) => r.exception).map((r) => r.pattern);
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (isIgnored(rel, rules) && !exceptions.some((p) => p.startsWith(`${rel}/`) || /[*?[]/.test(p))) continue;
        walk(rel);
      } else if ((entry.isFile() || entry.isSymbolicLink()) && !isIgnored(rel, rules)) out.push(rel);
    }
  };
  walk('');
  return out.sort();
}
