import { freePort, waitFor } from '@gpufleet/testing';
import { EngineSimProcesses, post, TEST_MODEL, type EngineSimProcess } from './__fixtures__/engine-sim.process';

const sims = new EngineSimProcesses();
afterAll(() => sims.stopAll());

// `proc.exited` settles once the process's pipes are drained into its log, so the line that says
// why it exited is there to read; the child's exitCode is set before that.
const exited = (sim: EngineSimProcess, what: string): Promise<number | null> => {
  let code: number | null | undefined;
  void sim.proc.exited.then((c) => (code = c));
  return waitFor(what, () => code, { timeoutMs: 20_000, intervalMs: 50 });
};

async function group(nnodes: number): Promise<{ leader: EngineSimProcess; workers: EngineSimProcess[]; addr: string }> {
  const addr = `127.0.0.1:${await freePort()}`;
  const flags = (rank: number) => ['--nnodes', String(nnodes), '--node-rank', String(rank), '--dist-init-addr', addr, '--itl-ms', '0', '--prefill-us-per-token', '0'];
  const leader = await sims.start(flags(0), {}, 'healthz');
  const workers: EngineSimProcess[] = [];
  for (let rank = 1; rank < nnodes; rank++) workers.push(await sims.start(flags(rank), {}, 'none'));
  return { leader, workers, addr };
}

describe('engine-sim as an engine group (--nnodes, --node-rank, --dist-init-addr)', () => {
  it('the leader answers 503 until every rank joined, then serves completions', async () => {
    const addr = `127.0.0.1:${await freePort()}`;
    const leader = await sims.start(['--nnodes', '2', '--node-rank', '0', '--dist-init-addr', addr, '--itl-ms', '0'], {}, 'healthz');
    expect((await fetch(`${leader.base}/health`)).status).toBe(503);
    const readyz = await fetch(`${leader.base}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.stringify(await readyz.json())).toContain('engine group forming: 1 of 2 ranks joined (waiting for rank 1)');
    const early = await post(leader.base, '/v1/completions', { model: TEST_MODEL, prompt: 'hi', max_tokens: 2 });
    expect(early.status).toBe(503);
    expect(early.text).toContain('The engine group is forming: 1 of 2 ranks joined (waiting for rank 1)');

    await sims.start(['--nnodes', '2', '--node-rank', '1', '--dist-init-addr', addr], {}, 'none');
    await waitFor('the group formed', async () => ((await fetch(`${leader.base}/health`)).status === 200) || undefined, { timeoutMs: 10_000, intervalMs: 50 });
    const answer = await post(leader.base, '/v1/completions', { model: TEST_MODEL, prompt: 'hi', max_tokens: 2 });
    expect(answer.status).toBe(200);
  });

  it('a worker started before its leader waits for it', async () => {
    const addr = `127.0.0.1:${await freePort()}`;
    const worker = await sims.start(['--nnodes', '2', '--node-rank', '1', '--dist-init-addr', addr], {}, 'none');
    await new Promise((r) => setTimeout(r, 600));
    expect(worker.proc.child.exitCode).toBeNull();
    const leader = await sims.start(['--nnodes', '2', '--node-rank', '0', '--dist-init-addr', addr]);
    expect((await fetch(`${leader.base}/health`)).status).toBe(200);
  });

  it('the leader exits 1 when a worker dies, and the other workers follow it', async () => {
    const { leader, workers } = await group(3);
    await waitFor('formed', async () => ((await fetch(`${leader.base}/health`)).status === 200) || undefined, { timeoutMs: 10_000, intervalMs: 50 });
    workers[0].proc.child.kill('SIGKILL');
    expect(await exited(leader, 'the leader exits')).toBe(1);
    expect(leader.log()).toContain('engine group: rank 1 left the group; its shard of the model is gone; exiting with 1');
    expect(await exited(workers[1], 'the last worker exits')).toBe(1);
    expect(workers[1].log()).toContain('left the group');
  });

  it('a worker exits 1 when the leader dies', async () => {
    const { leader, workers } = await group(2);
    await waitFor('formed', async () => ((await fetch(`${leader.base}/health`)).status === 200) || undefined, { timeoutMs: 10_000, intervalMs: 50 });
    leader.proc.child.kill('SIGKILL');
    expect(await exited(workers[0], 'the worker exits')).toBe(1);
  });

  it('refuses a rank started with another group size or a rank that joined already', async () => {
    const addr = `127.0.0.1:${await freePort()}`;
    const leader = await sims.start(['--nnodes', '3', '--node-rank', '0', '--dist-init-addr', addr], {}, 'healthz');
    const wrongSize = await sims.start(['--nnodes', '2', '--node-rank', '1', '--dist-init-addr', addr], {}, 'none');
    expect(await exited(wrongSize, 'the mismatched rank exits')).toBe(1);
    expect(wrongSize.log()).toContain("refused rank 1: the leader's group has 3 nodes, this rank was started with --nnodes 2");
    await sims.start(['--nnodes', '3', '--node-rank', '1', '--dist-init-addr', addr], {}, 'none');
    // the first rank 1 must have joined before the second starts, or the second may win the race
    await waitFor('rank 1 joined', async () => leader.log().includes('engine group: rank 1 joined') || undefined, { timeoutMs: 20_000, intervalMs: 50 });
    const twice = await sims.start(['--nnodes', '3', '--node-rank', '1', '--dist-init-addr', addr], {}, 'none');
    expect(await exited(twice, 'the second rank 1 exits')).toBe(1);
    expect(twice.log()).toContain('rank 1 has joined already');
  });

  it('a group size without a rendezvous address stops at start with the variable named', async () => {
    const sim = await sims.start(['--nnodes', '2'], {}, 'none');
    expect(await exited(sim, 'exit 78')).toBe(78);
    expect(sim.log()).toContain('DIST_INIT_ADDR');
  });
});
