import { mkdtempSync, readFileSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { logTail, type ManagedProcess, ProcessGroup } from './supervisor';

const dir = mkdtempSync(join(tmpdir(), 'gpufleet-supervisor-'));

describe('ProcessGroup', () => {
  it('keeps what a process printed just before exiting, and reports the exit once the log has it', async () => {
    const seen: Array<{ name: string; code: number | null; tail: string[] }> = [];
    const group = new ProcessGroup((p: ManagedProcess, code) => seen.push({ name: p.spec.name, code, tail: logTail(p.spec.logFile, 2) }));
    const logFile = join(dir, 'dies.log');
    // A burst larger than a pipe buffer, then the reason, then exit 1: as a service that fails at
    // start-up (pino writes to stdout; stdout and stderr are not ordered against each other).
    const script = `process.stdout.write('x'.repeat(200000) + '\\n'); console.log(JSON.stringify({ level: 'fatal', msg: 'failed to start: listen EADDRINUSE' })); process.exit(1);`;
    const p = group.start({ name: 'dies', command: process.execPath, args: ['-e', script], logFile });
    expect(await p.exited).toBe(1);
    expect(readFileSync(logFile, 'utf8')).toContain('x'.repeat(200000));
    expect(seen).toHaveLength(1);
    expect(seen[0].code).toBe(1);
    expect(seen[0].tail[1]).toBe('fatal: failed to start: listen EADDRINUSE');
  });

  it('keeps writing the log until the pipes close, for at most 2 s after the exit', async () => {
    const group = new ProcessGroup();
    // The child exits at once; a grandchild holding its stdout writes 300 ms later, then holds it 10 s.
    const script = `require('child_process').spawn('sh', ['-c', 'sleep 0.3; echo late; sleep 10'], { stdio: ['ignore', 'inherit', 'inherit'] }).unref(); process.exit(3);`;
    const logFile = join(dir, 'late.log');
    const started = Date.now();
    const p = group.start({ name: 'late', command: process.execPath, args: ['-e', script], logFile });
    expect(await p.exited).toBe(3);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(readFileSync(logFile, 'utf8')).toBe('late\n');
  });

  it('does not report processes it stopped itself', async () => {
    const seen: string[] = [];
    const group = new ProcessGroup((p) => seen.push(p.spec.name));
    group.start({ name: 'sleeper', command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'], logFile: join(dir, 'sleeper.log') });
    await group.stopAll(5_000);
    expect(seen).toEqual([]);
  });
});

describe('logTail', () => {
  it('shows pino lines as "level: msg" and other lines as they are, cut at 300 characters', () => {
    const file = join(dir, 'mixed.log');
    writeFileSync(
      file,
      [
        JSON.stringify({ level: 30, msg: 'listening' }),
        '',
        'plain text line',
        JSON.stringify({ level: 'error', msg: 'boom' }),
        '{not json',
        'y'.repeat(400),
      ].join('\n') + '\n',
    );
    expect(logTail(file, 10)).toEqual(['info: listening', 'plain text line', 'error: boom', '{not json', 'y'.repeat(300)]);
    expect(logTail(file, 2)).toEqual(['{not json', 'y'.repeat(300)]);
  });

  it('gives nothing for a missing file', () => {
    expect(logTail(join(dir, 'missing.log'))).toEqual([]);
  });
});
