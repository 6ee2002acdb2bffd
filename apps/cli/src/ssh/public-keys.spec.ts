import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { parsePublicKeys, readPublicKeys } from './public-keys';

const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop';
const RSA = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ== me@old';

describe('parsePublicKeys', () => {
  it('keeps key lines and skips blanks and comments', () => {
    expect(parsePublicKeys(`# mine\n${ED}\n\n${RSA}\n`, 'k.pub')).toEqual([ED, RSA]);
  });

  it('refuses a private key, naming the public file to pass', () => {
    expect(() => parsePublicKeys('-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n', '/h/.ssh/id_ed25519')).toThrow(
      '/h/.ssh/id_ed25519 is a private key; pass the public key file (/h/.ssh/id_ed25519.pub)',
    );
  });

  it('refuses other text, naming the line', () => {
    expect(() => parsePublicKeys(`${ED}\nhello world\n`, 'k.pub')).toThrow(/k.pub:2: expected an OpenSSH public key line/);
    expect(() => parsePublicKeys('\n', 'k.pub')).toThrow(/k.pub holds no public key/);
  });
});

describe('readPublicKeys', () => {
  const home = mkdtempSync(join(tmpdir(), 'gpufleet-keys-'));
  mkdirSync(join(home, '.ssh'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('reads every --ssh-key file, in order', () => {
    writeFileSync(join(home, 'a.pub'), `${ED}\n`);
    writeFileSync(join(home, 'b.pub'), `${RSA}\n`);
    expect(readPublicKeys([join(home, 'a.pub'), join(home, 'b.pub')], home)).toEqual([ED, RSA]);
  });

  it('names --ssh-key in every error', () => {
    expect(() => readPublicKeys([join(home, 'missing.pub')], home)).toThrow(`--ssh-key ${join(home, 'missing.pub')}: no such file`);
    writeFileSync(join(home, 'bad.pub'), 'nope\n');
    expect(() => readPublicKeys([join(home, 'bad.pub')], home)).toThrow(/^--ssh-key: .*bad.pub:1: expected/);
  });

  it('falls back to ~/.ssh/id_ed25519.pub, then ~/.ssh/id_rsa.pub, and says so when neither exists', () => {
    expect(() => readPublicKeys(undefined, home)).toThrow(/^--ssh-key: no SSH public key given and neither .*id_ed25519.pub nor .*id_rsa.pub exists; pass --ssh-key FILE.pub/);
    writeFileSync(join(home, '.ssh', 'id_rsa.pub'), `${RSA}\n`);
    expect(readPublicKeys([], home)).toEqual([RSA]);
    writeFileSync(join(home, '.ssh', 'id_ed25519.pub'), `${ED}\n`);
    expect(readPublicKeys(undefined, home)).toEqual([ED]);
  });
});
