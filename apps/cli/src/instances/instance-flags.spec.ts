import { instanceSpecFromFlags } from './instance-flags';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop';

describe('instanceSpecFromFlags', () => {
  it('defaults to one whole accelerator with 8 vCPU and 64 GiB in the default queue', () => {
    expect(instanceSpecFromFlags('dev', {}, [KEY])).toEqual({
      name: 'dev',
      namespace: 'default',
      localQueue: 'default',
      priority: 0,
      instanceType: '',
      resources: { accelerator: { whole: 1 }, vcpu: 8, memoryMib: 65536 },
      command: '',
      image: '',
      env: {},
      envFromSecret: {},
      sshPublicKeys: [KEY],
      stop: false,
      labels: {},
    });
  });

  it('maps the other flags', () => {
    const spec = instanceSpecFromFlags('nb', { namespace: 'team-a', queue: 'mig', command: 'jupyter lab', image: 'img:1', env: ['A=1'] }, [KEY, KEY]);
    expect(spec).toMatchObject({ namespace: 'team-a', localQueue: 'mig', command: 'jupyter lab', image: 'img:1', env: { A: '1' }, sshPublicKeys: [KEY, KEY] });
  });

  it.each([
    [{ accelerators: 2 }, { accelerator: { whole: 2 }, vcpu: 16, memoryMib: 131072 }],
    [{ accelerators: 0, vcpu: 2 }, { accelerator: undefined, vcpu: 2, memoryMib: 65536 }],
    [{ migProfile: '1g.10gb' }, { accelerator: { partitionProfile: '1g.10gb' }, vcpu: 4, memoryMib: 32768 }],
    [{ sliceMemory: 12288, sliceCores: 25 }, { accelerator: { slice: { memoryMib: 12288, coresPercent: 25 } }, vcpu: 4, memoryMib: 32768 }],
    [{ sliceMemoryPercent: 50, sliceCores: 30, memory: 16384 }, { accelerator: { slice: { memoryPercent: 50, coresPercent: 30 } }, vcpu: 4, memoryMib: 16384 }],
    [{ sharedTokens: 3, vcpu: 2 }, { accelerator: { sharedTokens: 3 }, vcpu: 2, memoryMib: 32768 }],
  ])('%j -> resources %j', (flags, resources) => {
    const spec = instanceSpecFromFlags('dev', flags, [KEY]);
    expect(spec.instanceType).toBe('');
    expect(spec.resources).toEqual(resources);
  });

  it('takes an InstanceType', () => {
    const spec = instanceSpecFromFlags('dev', { instanceType: 'l40s-x86-64.1x' }, [KEY]);
    expect(spec.instanceType).toBe('l40s-x86-64.1x');
    expect(spec.resources).toBeUndefined();
  });

  it.each([
    [{ accelerators: 1, migProfile: '1g.10gb' }, /--accelerators and --mig-profile each choose what a pod gets; pass only one/],
    [{ sharedTokens: 2, sliceCores: 10, sliceMemory: 100 }, /a slice \(--slice-\*\) and --shared-tokens each choose/],
    [{ sliceMemory: 1000 }, /--slice-memory needs --slice-cores P/],
    [{ sliceCores: 20 }, /--slice-cores needs --slice-memory MIB or --slice-memory-percent P/],
    [{ sliceMemory: 1, sliceMemoryPercent: 2, sliceCores: 3 }, /--slice-memory and --slice-memory-percent both size the slice/],
    [{ sliceMemoryPercent: 120, sliceCores: 3 }, /--slice-memory-percent 120: expected an integer from 1 to 100/],
    [{ sliceMemory: 1024, sliceCores: 0 }, /--slice-cores 0: expected an integer from 1 to 100/],
    [{ sharedTokens: 11 }, /--shared-tokens 11: expected an integer from 1 to 10 \(10 tokens are one accelerator\)/],
    [{ migProfile: ' ' }, /--mig-profile: expected a MIG profile/],
    [{ instanceType: 'x', memory: 10 }, /--instance-type fixes the pod's CPU and memory; drop --memory/],
    [{ vcpu: 0 }, /--vcpu 0: expected an integer from 1/],
    [{ queue: 'Q' }, /--queue "Q": expected a DNS-1123 label/],
  ])('refuses %j naming the flag', (flags, message) => {
    expect(() => instanceSpecFromFlags('dev', flags, [KEY])).toThrow(message);
  });

  it('refuses a name that is not a DNS-1123 label of at most 50 characters', () => {
    expect(() => instanceSpecFromFlags('Dev', {}, [KEY])).toThrow(/NAME "Dev": expected a DNS-1123 label/);
    expect(() => instanceSpecFromFlags('d'.repeat(51), {}, [KEY])).toThrow(/at most 50 characters/);
  });

  it('reads the keys only once the other flags are valid, and needs one', () => {
    const read = jest.fn(() => [KEY]);
    expect(() => instanceSpecFromFlags('dev', { sharedTokens: 0 }, read)).toThrow(/--shared-tokens 0/);
    expect(read).not.toHaveBeenCalled();
    expect(() => instanceSpecFromFlags('dev', {}, [])).toThrow(/--ssh-key: an instance needs at least one SSH public key/);
  });
  it('takes --env-secret as references to Secrets of the namespace', () => {
    const spec = instanceSpecFromFlags('dev', { namespace: 'team-a', env: ['A=1'], envSecret: ['WANDB_API_KEY=wandb/key'] }, [KEY]);
    expect(spec.env).toEqual({ A: '1' });
    expect(spec.envFromSecret).toEqual({ WANDB_API_KEY: { name: 'wandb', key: 'key' } });
    expect(() => instanceSpecFromFlags('dev', { env: ['A=1'], envSecret: ['A=s/k'] }, [KEY])).toThrow('A is also given with --env');
  });
});
