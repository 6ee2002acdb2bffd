import { parseManifests } from './manifests';

const DEPLOYMENT = `
kind: ModelDeployment
namespace: team-a
name: llama-8b
model: meta-llama/Llama-3.1-8B-Instruct
servedModelName: llama-3.1-8b
engine:
  engine: vllm
  version: 0.11.0
  mode: latency
  extraArgs: [--max-model-len, "8192"]
  env: { VLLM_LOGGING_LEVEL: DEBUG }
  speculative: { method: eagle3, draftModel: /models/eagle3, numSpeculativeTokens: 3 }
  kvOffload: { connector: OffloadingConnector, cpuBytes: 17179869184 }
roles:
  - role: prefill
    replicas: 2
    instanceType: h100-80gb-hbm3-x86-64.1x
  - role: decode
    size: 2
    resources: { accelerator: { whole: 4 }, vcpu: 32, memoryMib: 262144 }
    topology: { requiredLevel: nvlink-domain }
    extraArgs: [--enforce-eager]
    env: { NCCL_DEBUG: INFO }
labels: { team: a }
`;

const INSTANCE = `
kind: GPUInstance
name: dev-box
resources: { accelerator: { partitionProfile: 1g.10gb }, vcpu: 4, memoryMib: 32768 }
command: jupyter lab --port 8888
env: { JUPYTER_TOKEN: secret }
sshPublicKeys:
  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop
stop: true
`;

describe('parseManifests: ModelDeployment', () => {
  it('mirrors the spec in camelCase, with namespace, queue and role defaults', () => {
    const [m] = parseManifests(DEPLOYMENT, 'd.yaml');
    expect(m.kind).toBe('ModelDeployment');
    if (m.kind !== 'ModelDeployment') return;
    expect(m.spec).toEqual({
      name: 'llama-8b',
      namespace: 'team-a',
      localQueue: 'default',
      priority: 0,
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      artifact: '',
      servedModelName: 'llama-3.1-8b',
      engine: {
        engine: 'vllm',
        version: '0.11.0',
        mode: 'latency',
        customCommand: '', multiNode: '',
        extraArgs: ['--max-model-len', '8192'],
        env: { VLLM_LOGGING_LEVEL: 'DEBUG' },
        envFromSecret: {},
        speculative: { method: 'eagle3', draftModel: '/models/eagle3', numSpeculativeTokens: 3 },
        kvOffload: { connector: 'OffloadingConnector', cpuBytes: 17179869184 },
      },
      roles: [
        { role: 'prefill', replicas: 2, size: 1, instanceType: 'h100-80gb-hbm3-x86-64.1x', resources: undefined, topology: undefined, extraArgs: [], env: {}, envFromSecret: {} },
        {
          role: 'decode',
          replicas: 1,
          size: 2,
          instanceType: '',
          resources: { accelerator: { whole: 4 }, vcpu: 32, memoryMib: 262144 },
          topology: { requiredLevel: 'nvlink-domain', preferredLevel: '' },
          extraArgs: ['--enforce-eager'],
          env: { NCCL_DEBUG: 'INFO' },
          envFromSecret: {},
        },
      ],
      labels: { team: 'a' },
    });
  });

  it('takes an artifact in place of the model, and still refuses a document with neither', () => {
    const roles = 'roles: [{ resources: { accelerator: { whole: 1 }, vcpu: 8, memoryMib: 65536 } }]\n';
    const [m] = parseManifests(`kind: ModelDeployment\nname: q\nartifact: qwen-0-5b\n${roles}`, 'q.yaml');
    if (m.kind !== 'ModelDeployment') throw new Error(m.kind);
    expect(m.spec).toMatchObject({ artifact: 'qwen-0-5b', model: '' });
    expect(() => parseManifests(`kind: ModelDeployment\nname: q\n${roles}`, 'q.yaml')).toThrow(/\.model: expected a model path or reference/);
    expect(() => parseManifests(`kind: ModelDeployment\nname: q\nartifact: 3\n${roles}`, 'q.yaml')).toThrow(/\.artifact: expected a string, got 3/);
  });

  it('takes the engine as a bare name and a role without a role name as "server"', () => {
    const [m] = parseManifests('kind: ModelDeployment\nname: q\nmodel: /models/q\nengine: sglang\nroles: [{ resources: { accelerator: { whole: 1 }, vcpu: 8, memoryMib: 65536 } }]\n', 'q.yaml');
    if (m.kind !== 'ModelDeployment') throw new Error(m.kind);
    expect(m.spec.namespace).toBe('default');
    expect(m.spec.engine?.engine).toBe('sglang');
    expect(m.spec.roles[0]).toMatchObject({ role: 'server', replicas: 1, size: 1 });
  });

  it.each([
    ['kind: ModelDeployment\nname: x\nroles: [{}]\n', /x.yaml#1.model: expected a model path/],
    ['kind: ModelDeployment\nname: x\nmodel: m\n', /x.yaml#1.roles: expected a list of roles/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nreplicas: 2\nroles: [{}]\n', /x.yaml#1.replicas: unknown field/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nengine: tgi\nroles: [{}]\n', /x.yaml#1.engine.engine: expected one of vllm, sglang, trtllm, llama-cpp, custom, got "tgi"/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nengine: { engine: vllm, args: [] }\nroles: [{}]\n', /x.yaml#1.engine.args: unknown field/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nengine: { speculative: { method: medusa } }\nroles: [{}]\n', /engine.speculative.method: expected one of eagle3, mtp, ngram/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nroles: [{ role: router }]\n', /x.yaml#1.roles\[0\].role: expected one of server, prefill, decode, got "router"/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nroles: [{ resources: { gpus: 1 } }]\n', /x.yaml#1.roles\[0\].resources.gpus: unknown field/],
    ['kind: ModelDeployment\nname: x\nmodel: m\nroles: [{ extraArgs: --foo }]\n', /x.yaml#1.roles\[0\].extraArgs: expected a list of arguments/],
  ])('refuses %j with the field path', (text, message) => {
    expect(() => parseManifests(text, 'x.yaml')).toThrow(message);
  });
});

describe('parseManifests: GPUInstance', () => {
  it('mirrors the spec in camelCase', () => {
    const [m] = parseManifests(INSTANCE, 'i.yaml');
    if (m.kind !== 'GPUInstance') throw new Error(m.kind);
    expect(m.spec).toEqual({
      name: 'dev-box',
      namespace: 'default',
      localQueue: 'default',
      priority: 0,
      instanceType: '',
      resources: { accelerator: { partitionProfile: '1g.10gb' }, vcpu: 4, memoryMib: 32768 },
      command: 'jupyter lab --port 8888',
      image: '',
      env: { JUPYTER_TOKEN: 'secret' },
      envFromSecret: {},
      sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx me@laptop'],
      stop: true,
      labels: {},
    });
  });

  it('leaves sshPublicKeys empty when not given (submit fills in the default key)', () => {
    const [m] = parseManifests('kind: GPUInstance\nname: a\ninstanceType: l40s-x86-64.1x\n', 'i.yaml');
    if (m.kind !== 'GPUInstance') throw new Error(m.kind);
    expect(m.spec.sshPublicKeys).toEqual([]);
    expect(m.spec.instanceType).toBe('l40s-x86-64.1x');
  });

  it.each([
    ['kind: GPUInstance\nname: a\nsshKeys: []\n', /i.yaml#1.sshKeys: unknown field/],
    ['kind: GPUInstance\nname: a\nsshPublicKeys: ssh-ed25519 AAAA\n', /i.yaml#1.sshPublicKeys: expected a list of OpenSSH public key lines/],
    ['kind: GPUInstance\nname: a\nstop: yes please\n', /i.yaml#1.stop: expected true or false/],
    ['kind: GPUInstance\nname: a\nresources: { accelerator: { slice: { cores: 1 } } }\n', /i.yaml#1.resources.accelerator.slice.cores: unknown field/],
  ])('refuses %j with the field path', (text, message) => {
    expect(() => parseManifests(text, 'i.yaml')).toThrow(message);
  });
});

describe('parseManifests: mixed documents', () => {
  it('parses every kind in order and names the known kinds for an unknown one', () => {
    const text = `kind: LocalQueue\nname: default\nclusterQueue: h100\n---\n${DEPLOYMENT}\n---\n${INSTANCE}`;
    expect(parseManifests(text, 'all.yaml').map((m) => m.kind)).toEqual(['LocalQueue', 'ModelDeployment', 'GPUInstance']);
    expect(() => parseManifests('kind: Deployment\n', 'k.yaml')).toThrow(
      'k.yaml#1.kind: expected one of Workload, ClusterQueue, LocalQueue, ModelDeployment, GPUInstance, got "Deployment"',
    );
  });
});

describe('parseManifests: env_from_secret', () => {
  it('takes references to Secrets on the engine, a role and an instance', () => {
    const [d, i] = parseManifests(
      `kind: ModelDeployment
name: chat
model: /models/m
engine:
  engine: vllm
  envFromSecret: { HF_TOKEN: { name: hf-token, key: token } }
roles:
  - { replicas: 1, instanceType: x.1x, envFromSecret: { API_KEY: { name: keys, key: engine } } }
---
kind: GPUInstance
name: dev
envFromSecret: { WANDB_API_KEY: { name: wandb, key: key } }
`,
      'refs.yaml',
    );
    if (d.kind !== 'ModelDeployment' || i.kind !== 'GPUInstance') throw new Error('kinds');
    expect(d.spec.engine?.envFromSecret).toEqual({ HF_TOKEN: { name: 'hf-token', key: 'token' } });
    expect(d.spec.roles[0].envFromSecret).toEqual({ API_KEY: { name: 'keys', key: 'engine' } });
    expect(i.spec.envFromSecret).toEqual({ WANDB_API_KEY: { name: 'wandb', key: 'key' } });
  });

  it('refuses a reference that is not {name, key}', () => {
    expect(() => parseManifests('kind: GPUInstance\nname: dev\nenvFromSecret: { T: { secret: s } }\n', 'x.yaml')).toThrow('x.yaml#1.envFromSecret.T.secret: unknown field (expected one of name, key)');
    expect(() => parseManifests('kind: GPUInstance\nname: dev\nenvFromSecret: { T: hf/token }\n', 'x.yaml')).toThrow('x.yaml#1.envFromSecret.T: expected a mapping');
  });
});
