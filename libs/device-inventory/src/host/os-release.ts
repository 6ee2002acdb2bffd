/** Unquotes a shell-style os-release value: `"22.04"`, `'22.04'` or `22.04`. */
function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0]) {
    return v.slice(1, -1).replace(/\\(["'$`\\])/g, '$1');
  }
  return v;
}

export function parseOsReleaseFields(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) fields[match[1]] = unquote(match[2]);
  }
  return fields;
}

/**
 * OS identity as pools compare it: "linux/<ID>-<VERSION_ID>", e.g. "linux/ubuntu-22.04";
 * rolling releases without VERSION_ID give "linux/<ID>", and no os-release at all "linux".
 */
export function osIdentity(osReleaseText: string | undefined): string {
  if (osReleaseText === undefined) return 'linux';
  const fields = parseOsReleaseFields(osReleaseText);
  const id = (fields['ID'] ?? '').toLowerCase();
  if (!id) return 'linux';
  const version = fields['VERSION_ID'];
  return version ? `linux/${id}-${version}` : `linux/${id}`;
}
