// The gpufleet.io custom resources against the Kubernetes API simulator, driven by the real
// kubectl: the chart's CRDs applied with `kubectl apply --server-side`, the scheduler (real
// nats-server) mirroring its InstanceTypes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Buckets, NodeInventory } from '@gpufleet/contracts';
import { KvStore } from '@gpufleet/messaging';
import { node, startKubeApiServer, waitFor, type KubeApiServer } from '@gpufleet/testing';
import { SchedulerHarness } from '../../__fixtures__/scheduler-harness';

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const CRDS = resolve(__dirname, '../../../../../charts/gpufleet/crds');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('gpufleet.io custom resources (KUBE_CUSTOM_RESOURCES=true)', () => {
  let api: KubeApiServer;
  let h: SchedulerHarness;
  let dir: string;

  const args = (...rest: string[]): string[] => ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...rest];

  function kubectl(...rest: string[]): Promise<Run> {
    return new Promise((done, fail) => {
      const child = spawn(KUBECTL, args(...rest), { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', fail);
      child.on('close', (code) => {
        clearTimeout(timer);
        done({ code, stdout, stderr });
      });
    });
  }

  async function ok(...rest: string[]): Promise<string> {
    const run = await kubectl(...rest);
    if (run.code !== 0) throw new Error(`kubectl ${rest.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run.stdout;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubecrs-'));
    api = await startKubeApiServer();
    await ok('apply', '--server-side', '-f', CRDS);
    h = await SchedulerHarness.start({ env: { KUBE_CUSTOM_RESOURCES: 'true', KUBECONFIG: api.kubeconfigPath } });
  }, 60_000);

  afterAll(async () => {
    await h?.stop();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('mirrors InstanceTypes: `kubectl get it` shows live numbers and `-w` streams capacity changes', async () => {
    const table = await waitFor(
      'the leader to write the InstanceType resources',
      async () => {
        const out = await ok('get', 'instancetypes');
        return /\.8x\s/.test(out) ? out : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const lines = table.trim().split('\n');
    // The chart's printer columns, filled from spec and status.
    const header = lines[0].split(/\s+/);
    expect(header).toEqual(['NAME', 'POOL', 'ACCELERATOR', 'UNIT', 'WHOLE', 'SHARED', 'SLICED-MIB', 'READY-NODES', 'CREDITS', 'AGE']);
    // Cells counted from the right: the accelerator product has spaces.
    const fromRight = (name: string): number => header.length - header.indexOf(name);
    const cell = (c: string[], name: string): string => c[c.length - fromRight(name)];
    const row8 = lines.find((l) => /\.8x\s/.test(l))!;
    const cells = row8.split(/\s+/);
    expect(cell(cells, 'UNIT')).toBe('8');
    const free8 = Number(cell(cells, 'WHOLE'));
    expect(free8).toBeGreaterThan(0);
    // Every InstanceType of the model is there, with its status.
    const names = (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').sort();
    expect(names.length).toBeGreaterThan(1);
    const status = JSON.parse(await ok('get', 'it', cells[0], '-o', 'jsonpath={.status}')) as { capacity?: unknown; revision?: number };
    expect(status.capacity).toBeDefined();
    const managers = await ok('get', 'it', cells[0], '--show-managed-fields', '-o', 'jsonpath={.metadata.managedFields[*].manager}');
    expect(managers).toContain('gpufleet');

    const watch = spawn(KUBECTL, args('get', 'instancetypes', '-w'), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor('kubectl get -w to list the rows', async () => (/\.8x\s/.test(out) ? true : undefined), { timeoutMs: 10_000, intervalMs: 25 });
      const before = out.length;
      // One more 8-GPU node: the .8x InstanceType has one more whole unit.
      const nodes = await KvStore.open(h.nc.jetstream(), Buckets.nodes(h.cluster), NodeInventory);
      await nodes.put('gpu-2', { ...node('gpu-2'), cluster: h.cluster });
      const grown = (): boolean =>
        out
          .slice(before)
          .split('\n')
          .map((l) => l.trim().split(/\s+/))
          .some((c) => c[0] === cells[0] && Number(cell(c, 'WHOLE')) > free8);
      await waitFor('a new row with more free accelerators', async () => (grown() ? true : undefined), { timeoutMs: 10_000, intervalMs: 25 });
    } finally {
      watch.kill('SIGKILL');
    }
  }, 60_000);
});
