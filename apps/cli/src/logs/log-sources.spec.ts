import { DeploymentPhase, GPUInstance, InstancePhase, ModelDeployment } from '@gpufleet/contracts';
import { LinePrefixer, deploymentLogSources, instanceLogSource, logsRequestUrl } from './log-sources';

const url = (role: string, n: number) => `http://127.0.0.1:9000/v1/pods/team-a/llama-${role}-${n}/${role}/0/0/logs`;

function deployment(replicas: Array<{ role: string; ordinal: number; state: string; logsUrl?: string; message?: string }>): ModelDeployment {
  return ModelDeployment.fromPartial({
    spec: { name: 'llama', namespace: 'team-a' },
    status: { phase: DeploymentPhase.DEPLOYMENT_PHASE_STARTING, replicas },
  });
}

const served = deployment([
  { role: 'server', ordinal: 0, state: 'Ready', logsUrl: url('server', 0) },
  { role: 'server', ordinal: 1, state: 'Pending', message: 'Quota: ExceedsQuota' },
  { role: 'server', ordinal: 2, state: 'Starting', logsUrl: url('server', 2) },
]);

const disaggregated = deployment([
  { role: 'prefill', ordinal: 0, state: 'Ready', logsUrl: url('prefill', 0) },
  { role: 'decode', ordinal: 0, state: 'Ready', logsUrl: url('decode', 0) },
]);

describe('deploymentLogSources', () => {
  it('picks replica 0 by default, or the one asked for', () => {
    expect(deploymentLogSources(served, {}).sources).toEqual([{ label: 'server/0', url: url('server', 0) }]);
    expect(deploymentLogSources(served, { replica: 2 }).sources).toEqual([{ label: 'server/2', url: url('server', 2) }]);
  });

  it('says why a replica has no log yet', () => {
    expect(() => deploymentLogSources(served, { replica: 1 })).toThrow('replica server/1 of deployment team-a/llama has no logs yet (Pending: Quota: ExceedsQuota)');
  });

  it('lists the replicas there are when the ordinal does not exist', () => {
    expect(() => deploymentLogSources(served, { replica: 7 })).toThrow('--replica 7: deployment team-a/llama has no replica 7 (replicas: server/0, server/1, server/2)');
  });

  it('asks for --role when several roles have the ordinal', () => {
    expect(() => deploymentLogSources(disaggregated, {})).toThrow(/has replica 0 in roles prefill, decode; pick one with --role/);
    expect(deploymentLogSources(disaggregated, { role: 'decode' }).sources).toEqual([{ label: 'decode/0', url: url('decode', 0) }]);
    expect(() => deploymentLogSources(disaggregated, { role: 'server' })).toThrow('--role server: deployment team-a/llama has no replica of that role (roles: prefill, decode)');
  });

  it('with all, takes every replica that has a log and says which were left out', () => {
    expect(deploymentLogSources(served, { all: true })).toEqual({
      sources: [
        { label: 'server/0', url: url('server', 0) },
        { label: 'server/2', url: url('server', 2) },
      ],
      skipped: ['server/1 has no logs yet (Pending: Quota: ExceedsQuota)'],
    });
    expect(() => deploymentLogSources(served, { all: true, replica: 1 })).toThrow('--all and --replica both choose replicas; pass one');
  });

  it('says so when the deployment has no replicas yet', () => {
    expect(() => deploymentLogSources(deployment([]), {})).toThrow('deployment team-a/llama has no replicas yet (phase Starting); see `gpufleet describe deployment llama`');
  });
});

describe('instanceLogSource', () => {
  it('is the logs URL, or why there is none yet', () => {
    const running = GPUInstance.fromPartial({ spec: { name: 'dev', namespace: 'default' }, status: { phase: InstancePhase.INSTANCE_PHASE_RUNNING, logsUrl: 'http://h/logs' } });
    expect(instanceLogSource(running)).toEqual({ label: 'dev', url: 'http://h/logs' });
    const pending = GPUInstance.fromPartial({ spec: { name: 'dev', namespace: 'default' }, status: { phase: InstancePhase.INSTANCE_PHASE_PENDING, message: 'waiting for quota' } });
    expect(() => instanceLogSource(pending)).toThrow('instance default/dev has no logs yet (Pending: waiting for quota)');
  });
});

describe('logsRequestUrl', () => {
  it('adds tail and follow to the query', () => {
    expect(logsRequestUrl('http://127.0.0.1:9000/v1/pods/a/b/c/0/0/logs', { tail: 100, follow: true })).toBe('http://127.0.0.1:9000/v1/pods/a/b/c/0/0/logs?tail=100&follow=1');
    expect(logsRequestUrl('http://h/logs?stream=stderr', {})).toBe('http://h/logs?stream=stderr');
    expect(() => logsRequestUrl('not a url', {})).toThrow(/not a URL/);
  });
});

describe('LinePrefixer', () => {
  it('prefixes whole lines across chunk boundaries and flushes the last partial line', () => {
    const p = new LinePrefixer('[server/0] ');
    expect(p.push('hel')).toBe('');
    expect(p.push('lo\nwor')).toBe('[server/0] hello\n');
    expect(p.push('ld\n\nnext')).toBe('[server/0] world\n[server/0] \n');
    expect(p.flush()).toBe('[server/0] next\n');
    expect(p.flush()).toBe('');
  });
});
