import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { readAppended, tailLines } from './log-file';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gpufleet-log-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('tailLines', () => {
  it('gives the last N lines and the end offset', () => {
    const file = join(dir, 'pod.log');
    writeFileSync(file, 'one\ntwo\nthree\nfour\n');
    expect(tailLines(file, 2)).toEqual({ text: Buffer.from('three\nfour\n'), end: 19 });
    expect(tailLines(file, 10).text.toString()).toBe('one\ntwo\nthree\nfour\n');
    expect(tailLines(file, 0).text.toString()).toBe('');
  });

  it('counts a last line without a newline as a line', () => {
    const file = join(dir, 'pod.log');
    writeFileSync(file, 'one\ntwo\nthree');
    expect(tailLines(file, 2).text.toString()).toBe('two\nthree');
  });

  it('reads only the tail of a file larger than its read chunk', () => {
    const file = join(dir, 'pod.log');
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${'x'.repeat(20)}`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    expect(tailLines(file, 3).text.toString()).toBe(`${lines.slice(-3).join('\n')}\n`);
    expect(tailLines(file, 5_000).text.toString().split('\n')).toHaveLength(5_001);
  });

  it('treats a log that does not exist yet as empty', () => {
    expect(tailLines(join(dir, 'none.log'), 5)).toEqual({ text: Buffer.alloc(0), end: 0 });
  });
});

describe('readAppended', () => {
  it('returns what was appended since the offset, and starts over after a rotation truncated the file', () => {
    const file = join(dir, 'pod.log');
    writeFileSync(file, 'old\n');
    appendFileSync(file, 'new\n');
    expect(readAppended(file, 4)).toEqual({ data: Buffer.from('new\n'), next: 8 });
    expect(readAppended(file, 8)).toEqual({ data: Buffer.alloc(0), next: 8 });
    truncateSync(file, 0);
    appendFileSync(file, 'after\n');
    expect(readAppended(file, 8)).toEqual({ data: Buffer.from('after\n'), next: 6 });
  });
});
