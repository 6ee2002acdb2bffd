import { mkdtempSync, writeFileSync } from 'fs';
import { createServer } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { freePort, outgoingPortRange, StopWaiting, waitFor } from './ports';

describe('freePort', () => {
  it('picks ports below the outgoing-connection range, so no connection can hold them before use', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort([32768, 60999])));
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(10_000);
      expect(p).toBeLessThan(32768);
    }
  });

  it('never hands out the same port twice, even before anything binds it', async () => {
    // A narrow room makes a repeat likely if nothing prevented it.
    const ports: number[] = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort([11_000, 60999]));
    expect(new Set(ports).size).toBe(40);
  });

  it('returns a port a server can listen on', async () => {
    const port = await freePort();
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', () => resolve());
    });
    await new Promise((r) => srv.close(r));
  });

  it('lets the kernel pick when the outgoing range leaves no room below it', async () => {
    const port = await freePort([1024, 65535]);
    expect(port).toBeGreaterThan(0);
  });

  it('reads the outgoing range from the kernel file, and nothing from a missing or bad one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpufleet-ports-'));
    writeFileSync(join(dir, 'range'), '32768\t60999\n');
    writeFileSync(join(dir, 'bad'), 'x y\n');
    expect(outgoingPortRange(join(dir, 'range'))).toEqual([32768, 60999]);
    expect(outgoingPortRange(join(dir, 'bad'))).toBeUndefined();
    expect(outgoingPortRange(join(dir, 'missing'))).toBeUndefined();
  });
});

describe('waitFor', () => {
  it('tries a throwing probe again and quotes its last error at the timeout', async () => {
    let calls = 0;
    const wait = waitFor('the thing', () => {
      calls++;
      throw new Error('not yet');
    }, { timeoutMs: 200, intervalMs: 20 });
    await expect(wait).rejects.toThrow(/timed out after 200 ms waiting for the thing: not yet/);
    expect(calls).toBeGreaterThan(3);
  });

  it('ends at once when the probe throws StopWaiting', async () => {
    const started = Date.now();
    const wait = waitFor('the thing', () => {
      throw new StopWaiting('it exited');
    }, { timeoutMs: 10_000 });
    await expect(wait).rejects.toThrow(/^it exited$/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
