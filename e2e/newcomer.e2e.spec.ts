import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'fs';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import { InstanceServiceClient, SchedulingServiceClient, WorkloadPhase, WorkloadSpec, type CreateInstanceRequest } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { tmpdir } from 'os';
import { join } from 'path';
import { DEV_FLEET } from './support/services';
import { processTree } from '@gpufleet/process-kit';
import { UpProcess, gpufleet } from './support/cli';
import { listenersOf } from './support/listeners';

/**
 * The newcomer path: a fresh `gpufleet up` on the dev fleet, then `deploy` and `create
 * instance` with no queue set up. The default ClusterQueue of every pool and the namespace's
 * LocalQueue "default" (created on first use) carry them.
 */
const home = mkdtempSync(join(tmpdir(), 'gpufleet-newcomer-'));
const at = ['--home', home];
const GPU_POOLS = ['a100-sxm4-80gb-x86-64', 'h100-80gb-hbm3-x86-64', 'l40s-x86-64'];

/** The instance of the audit: a command run on a GPU node by whoever reaches the port. */
function InstanceService_create(name: string): CreateInstanceRequest {
  return { instance: { name, namespace: 'default', spec: { command: 'id > /tmp/gpufleet-pwned', sshPublicKeys: ['ssh-ed25519 AAAA pwn'] } } } as never;
}

describe('newcomer path on a fresh `gpufleet up`', () => {
  // --sample-hub: a local hub with sample repositories, so deploy-from-hub runs offline (last test).
  const up = new UpProcess([...at, '--fleet', DEV_FLEET, '--scheduler-port', '0', '--scheduler-http-port', '0', '--heartbeat-interval', '1', '--sample-hub']);

  afterAll(async () => {
    await up.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('deploys a model and creates an instance with no queue set up, then lists the default queues', async () => {
    await up.waitUp();

    const deployed = await gpufleet(['deploy', 'Qwen/Qwen3-8B', '--wait', ...at]);
    expect(deployed.stderr).toBe('');
    expect(deployed.code).toBe(0);
    expect(deployed.stdout).toMatch(/deployment\/default\/qwen3-8b is Ready/);

    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(home, 'key')]);
    const created = await gpufleet(['create', 'instance', 'dev', '--accelerators', '1', '--ssh-key', join(home, 'key.pub'), '--wait', ...at]);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/instance\/default\/dev is Running on h100-/);

    // Safe defaults: every listener of the stack (nats, redis, the services, the engine the
    // deployment runs, the instance's sshd) is on loopback, as `ss -ltnp` would show.
    const listeners = listenersOf(processTree(up.child.pid!));
    expect(listeners.length).toBeGreaterThanOrEqual(12);
    expect(listeners.some((l) => /engine-sim|main\.js serve/.test(l.command))).toBe(true);
    expect(listeners.some((l) => /sshd/.test(l.command))).toBe(true);
    expect(listeners.filter((l) => l.address !== '127.0.0.1' && l.address !== '::1').map((l) => `${l.address}:${l.port} ${l.command.slice(0, 120)}`)).toEqual([]);

    // Authenticated by default: `up` made an admin token in the home (0600), which the CLI used
    // above; a caller without it, or with a wrong one, is refused before anything runs.
    expect(statSync(join(home, 'admin-token')).mode & 0o777).toBe(0o600);
    const { scheduler } = JSON.parse(readFileSync(join(home, 'context.json'), 'utf8')) as { scheduler: string };
    const instances = new InstanceServiceClient(scheduler, credentials.createInsecure());
    const scheduling = new SchedulingServiceClient(scheduler, credentials.createInsecure());
    try {
      const attack = InstanceService_create('pwn');
      await expect(callUnary(instances, instances.createInstance, attack)).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
      const wrong = new Metadata();
      wrong.set('authorization', 'Bearer not-the-token');
      await expect(callUnary(instances, instances.createInstance, attack, { metadata: wrong })).rejects.toMatchObject({ code: status.UNAUTHENTICATED, details: 'UNAUTHENTICATED: the token presented is neither an access token (gfat_…) nor the admin token (GPUFLEET_ADMIN_TOKEN)' });
      await expect(callUnary(scheduling, scheduling.deleteWorkload, { namespace: 'default', name: 'anything' })).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
      const watch = scheduling.watchWorkloads({ namespace: '', initial: true } as never);
      await expect(new Promise((resolve, reject) => { watch.on('data', () => resolve('data')); watch.on('error', reject); })).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
      expect((await gpufleet(['get', 'instances', ...at])).stdout).not.toContain('pwn');

      // With the token, a forged owner label still cannot make a workload the deployment's
      // replica, and the real replica's workload is the deployment's to delete.
      const admin = new Metadata();
      admin.set('authorization', `Bearer ${readFileSync(join(home, 'admin-token'), 'utf8').trim()}`);
      const forged = { spec: WorkloadSpec.fromJSON({ name: 'fake-replica', namespace: 'default', labels: { 'gpufleet.io/deployment': 'qwen3-8b' } }) };
      await expect(callUnary(scheduling, scheduling.submitWorkload, forged, { metadata: admin })).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
        details: expect.stringContaining('spec.labels["gpufleet.io/deployment"]: expected no gpufleet.io owner label'),
      });
      const { workloads } = await callUnary(scheduling, scheduling.listWorkloads, { namespace: '', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: 0, pageToken: '' }, { metadata: admin });
      const replica = workloads.find((w) => w.spec?.labels['gpufleet.io/deployment'] === 'qwen3-8b')!;
      await expect(callUnary(scheduling, scheduling.deleteWorkload, { namespace: 'default', name: replica.spec!.name }, { metadata: admin })).rejects.toMatchObject({
        code: status.FAILED_PRECONDITION,
        details: expect.stringContaining('belongs to deployment "qwen3-8b": scale or delete the deployment instead'),
      });
    } finally {
      instances.close();
      scheduling.close();
    }

    const queues = await gpufleet(['get', 'queues', '-o', 'wide', ...at]);
    const rows = queues.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/\sMANAGED-BY$/);
    for (const pool of GPU_POOLS) expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^default-${pool}\\s+${pool}\\s.*\\sgpufleet$`)));
    // The deployment's replica and the instance: 2 of the 16 H100s, quota = the pool's 16.
    expect(rows.find((r) => r.startsWith('default-h100-'))).toMatch(/\s25600000\s+3200000\s+0\s+2\s+0\s+gpufleet$/);

    // The same "default" LocalQueue admits into every pool: an InstanceType of the L40S pool
    // goes through that pool's default ClusterQueue.
    const l40s = await gpufleet(['create', 'instance', 'on-l40s', '--instance-type', 'l40s-x86-64.1x', '--ssh-key', join(home, 'key.pub'), '--wait', ...at]);
    expect(l40s.stderr).toBe('');
    expect(l40s.code).toBe(0);
    expect(l40s.stdout).toMatch(/instance\/default\/on-l40s is Running on l40s-/);
    const after = (await gpufleet(['get', 'queues', '-o', 'wide', ...at])).stdout.trim().split('\n');
    expect(after.find((r) => r.startsWith('default-l40s-'))).toMatch(/\s6400000\s+1600000\s+0\s+1\s+0\s+gpufleet$/);

    const local = await gpufleet(['get', 'localqueues', '-o', 'wide', ...at]);
    expect(local.stdout.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/^default\s+default\s+default-h100-80gb-hbm3-x86-64\s+gpufleet$/)]);

    const other = await gpufleet(['deploy', 'Qwen/Qwen3-8B', '--name', 'other', '--queue', 'research', ...at]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/localQueue: expected a LocalQueue of namespace "default" \(create it with `gpufleet submit -f`.*or leave the queue unset to use "default".*\), got "research"/);
  });

  it('deploys a model from the sample hub: its verified copy in the node cache is what the engine loads, offline', async () => {
    expect(up.output).toMatch(/sample-hub\s+http:\/\/127\.0\.0\.1:\d+\s+\(HF_ENDPOINT of model delivery; sample\/tiny-llama, sample\/tiny-llama-gguf\)/);
    const created = await gpufleet(['create', 'artifact', 'tiny-llama', '--hf', 'sample/tiny-llama', '--wait', ...at]);
    expect(created.stderr).toBe('');
    expect(created.stdout).toMatch(/artifact\/default\/tiny-llama Ready: 7 files, manifest sha256:/);

    const deployed = await gpufleet(['deploy', '--artifact', 'tiny-llama', '--wait', ...at]);
    expect(deployed.stderr).toBe('');
    expect(deployed.stdout).toMatch(/deployment\/default\/tiny-llama is Ready/);

    const artifact = JSON.parse((await gpufleet(['get', 'artifacts', 'tiny-llama', '-o', 'json', ...at])).stdout) as { status: { nodes: Array<{ node: string; state: string; path: string }> } };
    const deployment = JSON.parse((await gpufleet(['get', 'deployments', 'tiny-llama', '-o', 'json', ...at])).stdout) as { status: { replicas: Array<{ node: string; state: string }> } };
    const [replica] = deployment.status.replicas;
    expect(replica.state).toBe('Ready');
    const copy = artifact.status.nodes.find((n) => n.node === replica.node);
    expect(copy).toMatchObject({ state: 'Ready', path: expect.stringMatching(/\/hf\/models--sample--tiny-llama\/snapshots\/[0-9a-f]{40}$/) });
    expect(copy!.path.startsWith(join(home, 'model-cache', replica.node) + '/')).toBe(true);
    expect(readFileSync(join(copy!.path, 'config.json'), 'utf8')).toContain('"LlamaForCausalLM"');

    // The engine the node runtime started for the replica (under its sandbox's wrappers) was
    // given the node cache's copy as its model.
    const withCopy = processTree(up.child.pid!).flatMap((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv.includes(copy!.path) ? [argv.join(' ')] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
    expect(withCopy.filter((cmdline) => /engine-sim|main\.js serve/.test(cmdline))).not.toEqual([]);
  });
});
