import fc from 'fast-check';
import { GPUInstanceSpec, ModelDeploymentSpec, Secret } from '@gpufleet/contracts';
import { validateDeploymentSpec } from './deployment-spec';
import { instanceWorkloadSpec, validateInstanceSpec } from './instance';
import { replicaWorkloadSpec } from './replica-workload';
import { checkEnvFromSecret, describeSecretRef, layerEnv, secretMetadata, SECRET_LIMITS, validateSecret } from './secrets';
import { templateHash } from './template-hash';
import { context, deploymentSpec, H100_POOL } from './__fixtures__/records';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0Vw9kq9Hq2h9b2m3XjW1u0y8yKzv7o5iJ9n0xQk1a user@laptop';
const ref = (name: string, key: string) => ({ name, key });

describe('validateSecret', () => {
  it('accepts a namespaced secret of a few keys', () => {
    expect(validateSecret('team-a', 'hf-token', { token: 'hf_abc', 'api.key': 'k' })).toEqual([]);
  });

  it.each([
    ['a bad name', 'team-a', 'HF_Token', { token: 'x' }, 'name: expected a DNS-1123 label'],
    ['a bad namespace', '', 'hf', { token: 'x' }, 'namespace: expected a DNS-1123 label'],
    ['no keys', 'team-a', 'hf', {}, 'data: expected at least one key, got none'],
    ['a key with a slash', 'team-a', 'hf', { 'a/b': 'x' }, 'data: expected a key of 1-253 letters, digits, "-", "_" and "." (not "." or ".."), got "a/b"'],
    ['a key of ".."', 'team-a', 'hf', { '..': 'x' }, 'data: expected a key of 1-253'],
    ['a NUL in a value', 'team-a', 'hf', { token: 'a\0b' }, 'data["token"]: expected a value without NUL characters'],
  ])('refuses %s, naming the field', (_what, namespace, name, data, message) => {
    expect(validateSecret(namespace, name, data).map((p) => p.message).join('; ')).toContain(message);
  });

  it(`bounds the keys to ${SECRET_LIMITS.keys} and the size to 64 KiB`, () => {
    const many = Object.fromEntries(Array.from({ length: SECRET_LIMITS.keys + 1 }, (_, i) => [`k${i}`, 'v']));
    expect(validateSecret('team-a', 'hf', many).map((p) => p.message)).toEqual(['data: expected at most 64 keys, got 65']);
    expect(validateSecret('team-a', 'hf', { big: 'x'.repeat(64 * 1024) }).map((p) => p.message)).toEqual(['data: expected at most 64 KiB of keys and values in all, got 65 KiB']);
    expect(validateSecret('team-a', 'hf', { big: 'x'.repeat(64 * 1024 - 3) })).toEqual([]);
  });

  it('never quotes a value in a problem', () => {
    const problems = validateSecret('team-a', 'Bad', { token: 'hunter2\0', ['x'.repeat(300)]: 'hunter2' });
    expect(JSON.stringify(problems)).not.toContain('hunter2');
  });
});

describe('secretMetadata', () => {
  it('is everything but the values: sorted key names and the size', () => {
    const secret: Secret = { name: 'hf', namespace: 'team-a', data: { token: 'hf_abc', a: 'b' }, createdAt: new Date(0), updatedAt: new Date(1), generation: 2 };
    const meta = secretMetadata(secret);
    expect(meta).toEqual({ name: 'hf', namespace: 'team-a', keys: ['a', 'token'], createdAt: new Date(0), updatedAt: new Date(1), generation: 2, sizeBytes: 13 });
    expect(JSON.stringify(meta)).not.toContain('hf_abc');
  });
});

describe('env_from_secret', () => {
  it('shows a reference as secret:NAME/KEY', () => {
    expect(describeSecretRef(ref('hf-token', 'token'))).toBe('secret:hf-token/token');
  });

  it('refuses a variable in env and env_from_secret, bad names and refs without a secret or key', () => {
    const problems = checkEnvFromSecret('roles[0]', { HF_TOKEN: 'x' }, { HF_TOKEN: ref('hf', 'token'), '1BAD': ref('hf', 'token'), A: ref('', 'token'), B: ref('hf', ''), C: ref('Bad_Name', 'k') });
    expect(problems.map((p) => p.message)).toEqual([
      'roles[0].envFromSecret.HF_TOKEN: expected a variable in env or envFromSecret, not both, got both',
      'roles[0].envFromSecret: expected environment variable names of letters, digits and "_", got "1BAD"',
      expect.stringMatching(/^roles\[0\]\.envFromSecret\.A\.name: expected the name of a Secret of the namespace \(.*\), got an empty string$/),
      'roles[0].envFromSecret.B.key: expected a key of 1-253 letters, digits, "-", "_" and "." (not "." or ".."), got an empty string',
      expect.stringMatching(/^roles\[0\]\.envFromSecret\.C\.name: expected the name of a Secret/),
    ]);
  });

  it('refuses a device visibility variable from a secret', () => {
    expect(checkEnvFromSecret('', {}, { CUDA_VISIBLE_DEVICES: ref('s', 'k') }).map((p) => p.field)).toEqual(['envFromSecret.CUDA_VISIBLE_DEVICES']);
  });

  it('validates deployments at the engine and at each role, with fields named', () => {
    const spec = deploymentSpec({
      engine: { engine: 'vllm', mode: 'throughput', version: '', customCommand: '', multiNode: '', extraArgs: [], env: { HF_TOKEN: 'x' }, envFromSecret: { HF_TOKEN: ref('hf', 'token') }, speculative: undefined, kvOffload: undefined },
      roles: [{ role: 'server', replicas: 1, size: 1, instanceType: `${H100_POOL}.1x`, resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: { KEY: ref('s', '') } }],
    });
    expect(validateDeploymentSpec(spec, context).map((p) => p.field)).toEqual(['engine.envFromSecret.HF_TOKEN', 'roles[0].envFromSecret.KEY.key']);
    const fine = deploymentSpec({ engine: { ...spec.engine!, env: {} }, roles: [{ ...spec.roles[0], envFromSecret: { KEY: ref('s', 'k') } }] });
    expect(validateDeploymentSpec(fine, context)).toEqual([]);
  });

  it('validates instances', () => {
    const instance = GPUInstanceSpec.fromPartial({ name: 'dev', namespace: 'team-a', localQueue: 'default', instanceType: `${H100_POOL}.1x`, sshPublicKeys: [KEY], env: { A: '1' }, envFromSecret: { A: ref('s', 'k') } });
    expect(validateInstanceSpec(instance, context).map((p) => p.field)).toEqual(['envFromSecret.A']);
  });

  it('layers a role over the engine: a variable it sets either way replaces the engine’s', () => {
    const base = { env: { A: '1', B: '2' }, envFromSecret: { C: ref('s', 'c'), D: ref('s', 'd') } };
    expect(layerEnv(base, { env: { C: 'plain' }, envFromSecret: { A: ref('s', 'a') } })).toEqual({ env: { B: '2', C: 'plain' }, envFromSecret: { A: ref('s', 'a'), D: ref('s', 'd') } });
  });

  it('carries references, not values, into the replica and instance workloads', () => {
    const spec = deploymentSpec({
      engine: { engine: 'vllm', mode: 'throughput', version: '', customCommand: '', multiNode: '', extraArgs: [], env: { A: '1' }, envFromSecret: { HF_TOKEN: ref('hf', 'token') }, speculative: undefined, kvOffload: undefined },
    });
    const role = { ...spec.roles[0], envFromSecret: { API_KEY: ref('keys', 'engine') } };
    const w = replicaWorkloadSpec(spec, role, 0, context.resolveInstanceType(`${H100_POOL}.1x`)!.resources, 'abcde');
    expect(w.template?.engine?.engine).toMatchObject({ env: { A: '1' }, envFromSecret: { HF_TOKEN: ref('hf', 'token'), API_KEY: ref('keys', 'engine') } });
    const instance = instanceWorkloadSpec(GPUInstanceSpec.fromPartial({ name: 'dev', namespace: 'team-a', envFromSecret: { T: ref('s', 'k') }, sshPublicKeys: [KEY] }), context.resolveInstanceType(`${H100_POOL}.1x`)!.resources, 'qwert');
    expect(instance.template?.instance?.envFromSecret).toEqual({ T: ref('s', 'k') });
  });

  it('keeps the template hash of a deployment without references, and changes it with one', () => {
    const plain = deploymentSpec();
    const legacy = ModelDeploymentSpec.fromPartial(plain);
    // What a record written before env_from_secret existed hashes to: the maps absent.
    delete (legacy.engine as { envFromSecret?: unknown }).envFromSecret;
    delete (legacy.roles[0] as { envFromSecret?: unknown }).envFromSecret;
    expect(templateHash(plain, plain.roles[0])).toBe(templateHash(legacy, legacy.roles[0]));
    const withRef = { ...plain.roles[0], envFromSecret: { HF_TOKEN: ref('hf', 'token') } };
    expect(templateHash(plain, withRef)).not.toBe(templateHash(plain, plain.roles[0]));
  });
});

describe('validateSecret and checkEnvFromSecret on any input', () => {
  it('answer problems (never throw), and never quote a value', () => {
    const value = fc.string({ maxLength: 300 }).map((s) => `V4LU3${s}`);
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.string({ maxLength: 80 }), fc.dictionary(fc.string({ maxLength: 300 }), value, { maxKeys: 80 }), (namespace, name, data) => {
        const problems = validateSecret(namespace, name, data);
        for (const p of problems) expect(p.message).not.toContain('V4LU3');
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 40 }), fc.string()),
        fc.dictionary(fc.string({ maxLength: 40 }), fc.record({ name: fc.string({ maxLength: 70 }), key: fc.string({ maxLength: 300 }) })),
        (env, refs) => {
          expect(Array.isArray(checkEnvFromSecret('engine', env, refs))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('accept what the CLI and the runtime can use, and refuse oversized data with the size named', () => {
    fc.assert(
      fc.property(fc.integer({ min: 64 * 1024 + 1, max: 200 * 1024 }), (size) => {
        const messages = validateSecret('team-a', 'big', { k: 'x'.repeat(size) }).map((p) => p.message);
        expect(messages).toEqual([`data: expected at most 64 KiB of keys and values in all, got ${Math.ceil((size + 1) / 1024)} KiB`]);
      }),
      { numRuns: 50 },
    );
  });
});
