import { putSecretRequestFromFlags } from './secret-flags';

const files: Record<string, string> = { '/run/hf.txt': 'hf_from_file\n', '/run/api-key': 'tok' };
const read = (path: string): string => {
  if (!(path in files)) throw new Error('ENOENT: no such file');
  return files[path];
};

describe('putSecretRequestFromFlags', () => {
  it('takes literals and files (KEY=PATH, or PATH keyed by its file name) into one request', () => {
    expect(putSecretRequestFromFlags('hf-token', { namespace: 'team-a', fromLiteral: ['token=hf_a=b'], fromFile: ['raw=/run/hf.txt', '/run/api-key'] }, read)).toEqual({
      namespace: 'team-a',
      name: 'hf-token',
      data: { token: 'hf_a=b', raw: 'hf_from_file\n', 'api-key': 'tok' },
    });
  });

  it('refuses what the API would refuse, naming the flag and never the value', () => {
    const cases: Array<[Parameters<typeof putSecretRequestFromFlags>[1], string]> = [
      [{}, 'give at least one --from-literal'],
      [{ fromLiteral: ['=hunter2'] }, '--from-literal: expected KEY=VALUE, got an empty KEY'],
      [{ fromLiteral: ['hunter2'] }, '--from-literal: expected KEY=VALUE, got no "="'],
      [{ fromLiteral: ['a/b=hunter2'] }, '--from-literal: KEY "a/b": expected a key of 1-253'],
      [{ fromLiteral: ['k=hunter2', 'k=hunter2'] }, 'key k is given twice'],
      [{ fromFile: ['k=/nope'] }, '--from-file k=/nope: cannot read /nope'],
      [{ fromLiteral: [`k=${'x'.repeat(65 * 1024)}`] }, 'at most 64 KiB of keys and values in all, got 66 KiB'],
    ];
    for (const [flags, message] of cases) {
      let error = '';
      try {
        putSecretRequestFromFlags('s', flags, read);
      } catch (err) {
        error = (err as Error).message;
      }
      expect(error).toContain(message);
      expect(error).not.toContain('hunter2');
    }
    expect(() => putSecretRequestFromFlags('Bad', { fromLiteral: ['k=v'] }, read)).toThrow('NAME "Bad": expected a DNS-1123 label');
  });
});
