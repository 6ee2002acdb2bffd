import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { isPortOpen, waitFor } from '@gpufleet/testing';
import { DEV_FLEET, REPO_ROOT } from './support/services';
import { UpProcess, gpufleet } from './support/cli';

const H100 = 'NVIDIA H100 80GB HBM3';
const quick = ['--scheduler-port', '0', '--scheduler-http-port', '0', '--heartbeat-interval', '1'];

describe('gpufleet up / get on the dev fleet', () => {
  const homeA = mkdtempSync(join(tmpdir(), 'gpufleet-home-a-'));
  const homeB = mkdtempSync(join(tmpdir(), 'gpufleet-home-b-'));
  const upA = new UpProcess(['--home', homeA, '--fleet', DEV_FLEET, ...quick]);
  let upB: UpProcess | undefined;

  afterAll(async () => {
    await upA.stop();
    await upB?.stop();
    for (const home of [homeA, homeB]) rmSync(home, { recursive: true, force: true });
  });

  it('brings the stack up and lists one InstanceType family per pool with the fleet capacity', async () => {
    await upA.waitUp();
    expect(upA.output).toMatch(/cluster "dev", 5 nodes/);
    expect(existsSync(join(homeA, 'context.json'))).toBe(true);

    const res = await gpufleet(['get', 'instancetypes', '-o', 'json', '--home', homeA]);
    expect(res.stderr).toBe('');
    const list = JSON.parse(res.stdout) as { kind: string; items: Array<{ acceleratorProduct: string; pool: string; unit: { accelerators: number }; capacity: { whole: { capacity: number } } }> };
    expect(list.kind).toBe('List');
    const h100 = list.items.filter((t) => t.acceleratorProduct === H100);
    expect(new Set(h100.map((t) => t.pool)).size).toBe(1);
    expect(h100.map((t) => t.unit.accelerators).sort((a, b) => a - b)).toEqual([1, 2, 4, 8]);
    expect(h100.find((t) => t.unit.accelerators === 1)?.capacity.whole.capacity).toBe(16);
    expect(new Set(list.items.map((t) => t.pool)).size).toBe(4);

    const nodes = await gpufleet(['get', 'nodes', '--home', homeA]);
    const rows = nodes.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^NAME\s+STATUS\s+POOL\s+ACCELERATORS/);
    expect(rows).toHaveLength(6);
    expect(rows.slice(1).every((r) => /\sReady\s/.test(r))).toBe(true);

    const one = await gpufleet(['get', 'nodes', 'h100-0', '-o', 'yaml', '--home', homeA]);
    expect(one.stdout).toMatch(/^name: h100-0$/m);
  });

  it('rejects a second stack in the same home and runs one beside it in another home', async () => {
    const again = await gpufleet(['up', '--home', homeA, '--fleet', DEV_FLEET]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already runs from .* \(pid \d+\); stop it, or use another --home/);

    const tiny = join(homeB, 'tiny.yaml');
    writeFileSync(tiny, 'cluster: side\nnodes:\n  - name: cpu-only-0\n');
    upB = new UpProcess(['--home', homeB, '--fleet', tiny, ...quick]);
    await upB.waitUp();
    // 4222 is held by stack A's NATS (or by a NATS that already ran): B picks a free port and says so.
    expect(upB.output).toMatch(/port 4222 for NATS is taken; using \d+/);
    const side = await gpufleet(['get', 'nodes', '--home', homeB]);
    expect(side.stdout).toMatch(/cpu-only-0/);
    expect(side.stdout).not.toMatch(/h100/);
    const main = await gpufleet(['get', 'pools', '--home', homeA]);
    expect(main.stdout.trim().split('\n')).toHaveLength(5);
  });

  it('submits queues and workloads, admits them, and shows allocations and pending reasons', async () => {
    const queues = await gpufleet(['submit', '-f', join(REPO_ROOT, 'examples/workloads/queues.yaml'), '--home', homeA]);
    expect(queues.stderr).toBe('');
    expect(queues.stdout).toMatch(/clusterqueue\/h100 configured/);
    const submitted = await gpufleet(['submit', '-f', join(REPO_ROOT, 'examples/workloads/workloads.yaml'), '--home', homeA]);
    expect(submitted.stdout.trim().split('\n')).toHaveLength(4);

    await waitFor('all four admitted', async () => {
      const res = await gpufleet(['get', 'workloads', '-o', 'json', '--home', homeA]);
      const items = (JSON.parse(res.stdout) as { items: Array<{ status?: { phase?: string } }> }).items;
      return (items.length === 4 && items.every((w) => w.status?.phase === 'WORKLOAD_PHASE_ADMITTED')) || undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });

    // The 8x trainer and two 1x servers hold 10 of the 16 H100s.
    await waitFor('capacity views to reflect the ledger', async () => {
      const res = await gpufleet(['get', 'instancetypes', 'h100-80gb-hbm3-x86-64.1x', '-o', 'json', '--home', homeA]);
      return (JSON.parse(res.stdout) as { capacity: { whole: { remaining: number } } }).capacity.whole.remaining === 6 || undefined;
    }, { timeoutMs: 30_000, intervalMs: 300 });

    const big = join(homeA, 'big.yaml');
    writeFileSync(big, 'kind: Workload\nnamespace: team-a\nname: too-big\nlocalQueue: default\npodSets:\n  - {name: w, count: 1, size: 1, resources: {accelerator: {whole: 8}}}\n');
    await gpufleet(['submit', '-f', big, '--home', homeA]);
    const described = await gpufleet(['describe', 'workload', 'too-big', '-n', 'team-a', '--home', homeA]);
    expect(described.stdout).toMatch(/Phase:\s+Pending/);
    expect(described.stdout).toMatch(/FAIL Quota: BorrowingLimitExceeded/);

    const deleted = await gpufleet(['delete', 'workload', 'train-tp8', '-n', 'team-a', '--home', homeA]);
    expect(deleted.stdout).toMatch(/deleted/);
    await waitFor('the pending workload to take the freed devices', async () => {
      const res = await gpufleet(['get', 'workloads', 'too-big', '-n', 'team-a', '-o', 'json', '--home', homeA]);
      return (JSON.parse(res.stdout) as { status?: { phase?: string } }).status?.phase === 'WORKLOAD_PHASE_ADMITTED' || undefined;
    }, { timeoutMs: 30_000, intervalMs: 300 });

    const bad = join(homeA, 'bad.yaml');
    writeFileSync(bad, 'kind: Workload\nname: x\nlocalQueue: default\npodSets: [{name: a, count: 1, size: 1, resoruces: {}}]\n');
    const rejected = await gpufleet(['submit', '-f', bad, '--home', homeA]);
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/podSets\[0\]\.resoruces: unknown field \(expected one of name, count, size, resources, topology\)/);
  });

  it('explains what to do when no stack runs, and for a bad resource kind', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'gpufleet-home-none-'));
    const res = await gpufleet(['get', 'nodes', '--home', empty]);
    rmSync(empty, { recursive: true, force: true });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no running gpufleet stack found in .*start one with `gpufleet up`/);
    const bad = await gpufleet(['get', 'gpus', '--home', homeA]);
    expect(bad.stderr).toMatch(/unknown resource "gpus": expected one of nodes, pools, instancetypes/);
  });

  it('stops everything it started on SIGTERM and removes its context', async () => {
    const ctx = JSON.parse(readFileSync(join(homeA, 'context.json'), 'utf8')) as { scheduler: string };
    const port = Number(ctx.scheduler.split(':')[1]);
    expect(await upA.stop()).toBe(0);
    expect(upA.output).toMatch(/stopped\./);
    expect(existsSync(join(homeA, 'context.json'))).toBe(false);
    expect(await isPortOpen(port)).toBe(false);
  });
});
