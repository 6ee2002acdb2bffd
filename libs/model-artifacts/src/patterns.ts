/**
 * File selection with huggingface_hub's semantics (`filter_repo_objects`): Python `fnmatch`
 * globs matched against the whole repository path, case-sensitively as on POSIX, where `*` also
 * crosses `/`, `?` is one character, `[seq]` / `[!seq]` a character class; a pattern ending in `/`
 * gets `*` appended so it selects everything under that directory. A file is kept when it matches
 * some allow pattern (or there are none) and no ignore pattern.
 */

const compiled = new Map<string, RegExp>();

/** The regular expression Python's `fnmatch.translate` gives for a pattern. */
export function globToRegExp(pattern: string): RegExp {
  let hit = compiled.get(pattern);
  if (hit) return hit;
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') {
      while (pattern[i + 1] === '*') i++;
      out += '[\\s\\S]*';
    } else if (c === '?') {
      out += '[\\s\\S]';
    } else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '!') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j++;
      if (j >= pattern.length) {
        out += '\\[';
      } else {
        let body = pattern.slice(i + 1, j);
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        body = body.replace(/\\/g, '\\\\').replace(/\^/g, '\\^').replace(/\[/g, '\\[').replace(/]/g, '\\]');
        out += negate ? `[^${body}]` : `[${body}]`;
        i = j;
      }
    } else {
      out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  hit = new RegExp(`^${out}$`);
  if (compiled.size > 10_000) compiled.clear();
  compiled.set(pattern, hit);
  return hit;
}

function expand(pattern: string): string {
  return pattern.endsWith('/') ? `${pattern}*` : pattern;
}

export function matchesAny(path: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => globToRegExp(expand(p)).test(path));
}

/** Whether a repository path is selected by an artifact's allow and ignore patterns. */
export function isSelected(path: string, allowPatterns: readonly string[], ignorePatterns: readonly string[]): boolean {
  if (allowPatterns.length > 0 && !matchesAny(path, allowPatterns)) return false;
  return !matchesAny(path, ignorePatterns);
}
