import { existsSync, readFileSync } from 'fs';
import { homedir } from 'os';
import { join } from 'path';

/** Key types OpenSSH writes at the start of a public key line. */
const KEY_TYPE = /^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)$/;

/** The public key lines of an `authorized_keys`-style text; throws naming `file` (and the line) for anything else. */
export function parsePublicKeys(text: string, file: string): string[] {
  if (/PRIVATE KEY/.test(text)) throw new Error(`${file} is a private key; pass the public key file (${file}.pub)`);
  const keys: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const [type, blob] = line.split(/\s+/);
    if (!KEY_TYPE.test(type) || !blob || !/^[A-Za-z0-9+/]+={0,3}$/.test(blob)) {
      throw new Error(`${file}:${i + 1}: expected an OpenSSH public key line ("ssh-ed25519 AAAA… comment"), got ${JSON.stringify(line.slice(0, 40))}`);
    }
    keys.push(line);
  });
  if (keys.length === 0) throw new Error(`${file} holds no public key`);
  return keys;
}

/** Where a key is looked for when --ssh-key is not given, in order; the first that exists is used. */
export function defaultPublicKeyFiles(home = homedir()): string[] {
  return [join(home, '.ssh', 'id_ed25519.pub'), join(home, '.ssh', 'id_rsa.pub')];
}

/**
 * The public keys of --ssh-key FILE (repeatable), or of the first default key file that exists.
 * Every error names --ssh-key.
 */
export function readPublicKeys(files: readonly string[] | undefined, home = homedir()): string[] {
  if (files && files.length > 0) {
    return files.flatMap((file) => {
      if (!existsSync(file)) throw new Error(`--ssh-key ${file}: no such file`);
      return withFlag(() => parsePublicKeys(readFileSync(file, 'utf8'), file));
    });
  }
  const found = defaultPublicKeyFiles(home).find((f) => existsSync(f));
  if (!found) {
    const tried = defaultPublicKeyFiles(home).join(' nor ');
    throw new Error(`--ssh-key: no SSH public key given and neither ${tried} exists; pass --ssh-key FILE.pub (or create a key with \`ssh-keygen -t ed25519\`)`);
  }
  return withFlag(() => parsePublicKeys(readFileSync(found, 'utf8'), found));
}

function withFlag<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new Error(`--ssh-key: ${(err as Error).message}`);
  }
}
