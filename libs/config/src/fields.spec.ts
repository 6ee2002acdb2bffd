import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bool, duration, FieldParseError, file, int, list, port, str, url } from './fields';

function parseError(parse: () => unknown): FieldParseError {
  try {
    parse();
  } catch (error) {
    if (error instanceof FieldParseError) return error;
    throw error;
  }
  throw new Error('expected a FieldParseError');
}

describe('field helpers', () => {
  describe('str', () => {
    it('accepts only the declared choices', () => {
      const level = str({ choices: ['info', 'debug'], default: 'info', desc: 'level' });
      expect(level.parse('debug')).toBe('debug');
      expect(parseError(() => level.parse('loud')).expected).toBe('one of info, debug');
    });

    it('checks a pattern and uses its description in the expectation', () => {
      const token = str({ pattern: /^[a-z]+$/, patternDesc: 'a lower-case word', desc: 'x' });
      expect(token.parse('abc')).toBe('abc');
      expect(parseError(() => token.parse('ABC')).expected).toBe('a lower-case word');
    });

    it('rejects a default that is not among the choices at declaration time', () => {
      expect(() => str({ choices: ['a'], default: 'b', desc: 'x' })).toThrow(/not one of a/);
    });

    it('is required without a default, optional when asked, never both', () => {
      expect(str({ desc: 'x' }).required).toBe(true);
      expect(str({ desc: 'x', optional: true }).required).toBe(false);
      expect(str({ desc: 'x', default: 'y' }).required).toBe(false);
    });
  });

  describe('int and port', () => {
    it('parses integers within the range', () => {
      const n = int({ min: 1, max: 10, desc: 'x' });
      expect(n.parse('7')).toBe(7);
      expect(n.parse('+3')).toBe(3);
    });

    it.each(['abc', '1.5', '0', '11', '1e3', '0x10'])('rejects %p', (raw) => {
      expect(parseError(() => int({ min: 1, max: 10, desc: 'x' }).parse(raw)).expected).toBe('an integer 1-10');
    });

    it('describes an open range', () => {
      expect(int({ min: 0, desc: 'x' }).expected).toBe('an integer >= 0');
      expect(int({ desc: 'x' }).expected).toBe('an integer');
    });

    it('limits a port to 1-65535', () => {
      const p = port({ default: 8080, desc: 'x' });
      expect(p.parse('65535')).toBe(65535);
      expect(parseError(() => p.parse('65536')).expected).toBe('an integer 1-65535');
      expect(p.defaultValue).toBe(8080);
    });
  });

  describe('bool', () => {
    it.each([
      ['true', true],
      ['YES', true],
      ['1', true],
      ['on', true],
      ['false', false],
      ['No', false],
      ['0', false],
      ['off', false],
    ])('reads %p as %p', (raw, expected) => {
      expect(bool({ desc: 'x' }).parse(raw)).toBe(expected);
    });

    it('rejects other words', () => {
      expect(() => bool({ desc: 'x' }).parse('maybe')).toThrow(FieldParseError);
    });
  });

  describe('url', () => {
    it('keeps the value as written when the scheme is allowed', () => {
      expect(url({ protocols: ['nats', 'tls'], desc: 'x' }).parse('tls://nats-0.nats:4222')).toBe(
        'tls://nats-0.nats:4222',
      );
    });

    it('names the allowed schemes when another is given', () => {
      const error = parseError(() => url({ protocols: ['redis', 'rediss'], desc: 'x' }).parse('http://x'));
      expect(error.expected).toBe('a redis:// or rediss:// URL');
      expect(error.detail).toBe('scheme "http" is not allowed');
    });

    it('rejects text that is not a URL and a URL without a host', () => {
      expect(() => url({ desc: 'x' }).parse('127.0.0.1:4222')).toThrow(FieldParseError);
      expect(() => url({ desc: 'x' }).parse('not a url')).toThrow(FieldParseError);
      expect(parseError(() => url({ desc: 'x' }).parse('http://')).expected).toBe('an absolute URL');
    });
  });

  describe('duration', () => {
    it.each([
      ['45', 45],
      ['1.5', 1.5],
      ['500ms', 0.5],
      ['30s', 30],
      ['5m', 300],
      ['1h', 3600],
    ])('reads %p as %p seconds', (raw, seconds) => {
      expect(duration({ desc: 'x' }).parse(raw)).toBe(seconds);
    });

    it('rejects unknown units, negatives and values out of range', () => {
      const d = duration({ min: 1, max: 60, desc: 'x' });
      for (const raw of ['5d', '-3', 'soon', '0.5', '2m']) expect(() => d.parse(raw)).toThrow(FieldParseError);
      expect(d.expected).toBe('a duration in seconds 1-60 (e.g. 30, 1.5, 500ms, 5m, 1h)');
    });
  });

  describe('file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpufleet-config-'));
    const existing = join(dir, 'ca.pem');
    writeFileSync(existing, 'pem');
    mkdirSync(join(dir, 'sub'));

    it('accepts a readable file', () => {
      expect(file({ desc: 'x' }).parse(existing)).toBe(existing);
    });

    it('says when the file is missing or is a directory', () => {
      expect(parseError(() => file({ desc: 'x' }).parse(join(dir, 'nope'))).detail).toBe('no such file');
      expect(parseError(() => file({ desc: 'x' }).parse(join(dir, 'sub'))).detail).toBe('not a regular file');
    });

    it('skips the check when mustExist is false', () => {
      expect(file({ mustExist: false, desc: 'x' }).parse(join(dir, 'later'))).toBe(join(dir, 'later'));
    });
  });

  describe('list', () => {
    it('splits on commas, trims and drops empty items', () => {
      expect(list({ desc: 'x' }).parse(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
    });

    it('parses every item with the item spec and names the bad one', () => {
      const servers = list({ of: url({ protocols: ['nats'], desc: 'server' }), desc: 'x' });
      expect(servers.parse('nats://a:4222,nats://b:4222')).toEqual(['nats://a:4222', 'nats://b:4222']);
      const error = parseError(() => servers.parse('nats://a:4222, http://b'));
      expect(error.expected).toBe('a comma-separated list of URL (nats)');
      expect(error.detail).toBe('item 2: expected a nats:// URL; scheme "http" is not allowed');
    });

    it('needs at least one item', () => {
      expect(() => list({ desc: 'x' }).parse(',,')).toThrow(FieldParseError);
    });
  });
});
