import type { V1Container } from '@kubernetes/client-node';
import { EngineSpecError } from '@gpufleet/engine-presets';
import { PodPlanError } from '@gpufleet/node-runtime-core';
import { context, enginePod, instancePod, inventory } from './__fixtures__/pods';
import { KubeAnnotations, KubeLabels } from './names';
import { podManifestOf, SSH_PORT, SSHD_SCRIPT } from './pod-manifest';

const env = (c: V1Container): Record<string, unknown> => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

describe('podManifestOf: an engine pod', () => {
  const pod = podManifestOf(enginePod(), context());
  const engine = pod.spec!.containers[0];

  it('is named after its workload, pod set, replica and pod, in the gpufleet namespace, pinned to its node', () => {
    expect(pod.metadata).toMatchObject({ name: 'llama-s0-bcdfg-server-0-0', namespace: 'team-a' });
    expect(pod.spec!.nodeName).toBe('h100-0');
    expect(pod.spec!.affinity).toBeUndefined();
  });

  it('runs the preset command of the engine in the engine image, on port 8000 named http', () => {
    expect(engine.image).toBe('vllm/vllm-openai:v0.11.0');
    expect(engine.command).toEqual(['vllm']);
    expect(engine.args!.slice(0, 2)).toEqual(['serve', '/models/llama-3.1-8b']);
    expect(engine.args).toEqual(expect.arrayContaining(['--tensor-parallel-size', '2', '--port', '8000', '--host', '0.0.0.0']));
    expect(engine.ports).toEqual([{ name: 'http', containerPort: 8000, protocol: 'TCP' }]);
  });

  it('probes /health for startup, readiness and liveness', () => {
    for (const probe of [engine.startupProbe, engine.readinessProbe, engine.livenessProbe]) expect(probe!.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(engine.startupProbe!.failureThreshold! * engine.startupProbe!.periodSeconds!).toBeGreaterThanOrEqual(1800);
  });

  it('requests and limits cpu, memory and its whole GPUs alike', () => {
    const q = { cpu: '16', memory: '65536Mi', 'gpufleet.io/nvidia-gpu': '2' };
    expect(engine.resources).toEqual({ requests: q, limits: q });
  });

  it('passes the exact devices as the gpufleet.io/devices annotation', () => {
    expect(JSON.parse(pod.metadata!.annotations![KubeAnnotations.devices])).toEqual({
      resource: 'gpufleet.io/nvidia-gpu',
      vendor: 'nvidia',
      accelerators: [
        { id: 'nvidia-1', index: 1, uuid: 'GPU-00000001-aaaa-bbbb-cccc-dddddddddddd' },
        { id: 'nvidia-2', index: 2, uuid: 'GPU-00000002-aaaa-bbbb-cccc-dddddddddddd' },
      ],
    });
  });

  it('takes Secret values by secretKeyRef, never by value, and leaves the device variables to the device plugin', () => {
    const vars = env(engine);
    expect(vars.HF_TOKEN).toEqual({ secretKeyRef: { name: 'hf-token', key: 'token' } });
    expect(vars.VLLM_LOGGING_LEVEL).toBe('INFO');
    expect(vars.GPUFLEET_POD).toBe('team-a/llama-s0-bcdfg/server/0/0');
    expect(vars.GPUFLEET_TEMPLATE_HASH).toBe('abc123');
    expect(vars).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
  });

  it('is labelled managed-by gpufleet with its deployment, role, replica, namespace and owner uid', () => {
    expect(pod.metadata!.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'gpufleet',
      [KubeLabels.deployment]: 'llama',
      [KubeLabels.role]: 'server',
      [KubeLabels.ordinal]: '0',
      [KubeLabels.ownerUid]: 'uid-llama',
      [KubeLabels.namespace]: 'team-a',
      [KubeLabels.workload]: 'llama-s0-bcdfg',
      [KubeLabels.replica]: '0',
      [KubeLabels.endpoint]: 'true',
    });
  });

  it('restarts Always, tolerates the accelerator taints and has the configured grace period', () => {
    expect(pod.spec!.restartPolicy).toBe('Always');
    expect(pod.spec!.tolerations).toEqual(expect.arrayContaining([{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]));
    expect(pod.spec!.terminationGracePeriodSeconds).toBe(30);
    expect(podManifestOf(enginePod(), context({ stopGraceS: 90 })).spec!.terminationGracePeriodSeconds).toBe(90);
  });

  it('mounts no service account token and labels the node only when its name fits a label value', () => {
    expect(pod.spec!.automountServiceAccountToken).toBe(false);
    expect(pod.metadata!.labels![KubeLabels.node]).toBe('h100-0');
    const longNode = 'gpu-node-' + 'x'.repeat(60) + '.example.internal';
    const cpuOnly = instancePod({ placement: { acceleratorIds: [] } });
    const far = podManifestOf({ ...cpuOnly, ref: { ...cpuOnly.ref, node: longNode } }, context());
    expect(far.spec!.nodeName).toBe(longNode);
    expect(far.metadata!.labels).not.toHaveProperty(KubeLabels.node);
  });

  it('has no owner reference unless an owner is given', () => {
    expect(pod.metadata!.ownerReferences).toBeUndefined();
    const owned = podManifestOf({ ...enginePod(), owner: { kind: 'ModelDeployment', name: 'llama', uid: 'k8s-uid-1' } }, context());
    expect(owned.metadata!.ownerReferences).toEqual([{ apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment', name: 'llama', uid: 'k8s-uid-1', controller: true, blockOwnerDeletion: true }]);
  });
});

describe('podManifestOf: determinism and the spec hash', () => {
  it('gives the same object and hash for the same pod, whatever the order of map keys', () => {
    const a = podManifestOf(enginePod(), context());
    const b = podManifestOf(enginePod({ run: { engine: { ...enginePod().template.engine!.engine!, env: { VLLM_LOGGING_LEVEL: 'INFO' } } } }), context());
    expect(b).toEqual(a);
    expect(a.metadata!.annotations![KubeAnnotations.specHash]).toMatch(/^sha256:[0-9a-f]{32}$/);
  });

  it('changes the hash when the template, the number of devices or the image change', () => {
    const base = podManifestOf(enginePod(), context()).metadata!.annotations![KubeAnnotations.specHash];
    const hashes = [
      podManifestOf(enginePod({ run: { templateHash: 'def456' } }), context()),
      podManifestOf(enginePod({ placement: { acceleratorIds: ['nvidia-1'] } }), context()),
      podManifestOf(enginePod(), context({ images: { vllm: 'registry.local/vllm:v0.11.0' } })),
    ].map((p) => p.metadata!.annotations![KubeAnnotations.specHash]);
    for (const h of hashes) expect(h).not.toBe(base);
  });

  it('keeps the hash when only which devices changes: the kubelet chooses them, and a corrected ledger must not replace the Pod', () => {
    const asked = podManifestOf(enginePod(), context());
    const corrected = podManifestOf(enginePod({ placement: { acceleratorIds: ['nvidia-0', 'nvidia-3'] } }), context());
    expect(corrected.metadata!.annotations![KubeAnnotations.devices]).not.toBe(asked.metadata!.annotations![KubeAnnotations.devices]);
    expect(corrected.metadata!.annotations![KubeAnnotations.specHash]).toBe(asked.metadata!.annotations![KubeAnnotations.specHash]);
  });

  it('hashes a long name into a stable DNS-1123 label of at most 63 characters', () => {
    const long = 'a'.repeat(40) + '-s12-bcdfg';
    const a = podManifestOf(enginePod({ ref: { workload: long, podSet: 'prefill', replica: 12, pod: 3 } }), context()).metadata!.name!;
    const b = podManifestOf(enginePod({ ref: { workload: long, podSet: 'prefill', replica: 12, pod: 3 } }), context()).metadata!.name!;
    const other = podManifestOf(enginePod({ ref: { workload: long, podSet: 'prefill', replica: 12, pod: 4 } }), context()).metadata!.name!;
    expect(a).toBe(b);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(a).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(other).not.toBe(a);
  });
});

describe('podManifestOf: devices and images', () => {
  it('asks for shared tokens on gpufleet.io/nvidia-gpu-shared', () => {
    const pod = podManifestOf(enginePod({ placement: { acceleratorIds: ['nvidia-0'], sharedTokens: 5 } }), context());
    expect(pod.spec!.containers[0].resources!.limits!['gpufleet.io/nvidia-gpu-shared']).toBe('5');
    expect(JSON.parse(pod.metadata!.annotations![KubeAnnotations.devices]).sharedTokens).toBe(5);
  });

  it('asks for one gpufleet.io/nvidia-gpu-slice and names its memory and cores in the annotation', () => {
    const pod = podManifestOf(enginePod({ placement: { acceleratorIds: ['nvidia-0'], sliceMemoryMib: 20480, sliceCoresPercent: 25 } }), context());
    expect(pod.spec!.containers[0].resources!.limits!['gpufleet.io/nvidia-gpu-slice']).toBe('1');
    expect(JSON.parse(pod.metadata!.annotations![KubeAnnotations.devices]).slice).toEqual({ memoryMib: 20480, coresPercent: 25 });
  });

  it('asks for gpufleet.io/nvidia-mig-<profile> with the MIG device UUID in the annotation', () => {
    const pod = podManifestOf(enginePod({ placement: { acceleratorIds: [], partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 4 } } }), context({}, inventory('h100-0', { mig: true })));
    expect(pod.spec!.containers[0].resources!.limits!['gpufleet.io/nvidia-mig-3g.40gb']).toBe('1');
    expect(JSON.parse(pod.metadata!.annotations![KubeAnnotations.devices]).mig).toEqual({ acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 4, uuid: 'MIG-d9a47cfb-d1f2-d08c-b40e-0812b597ae69' });
  });

  it('gives a CPU-only pod no device resource, no annotation and no tolerations', () => {
    const pod = podManifestOf(instancePod({ placement: { acceleratorIds: [] } }), context());
    expect(pod.metadata!.annotations).not.toHaveProperty(KubeAnnotations.devices);
    expect(pod.spec!.tolerations).toBeUndefined();
    expect(Object.keys(pod.spec!.containers[0].resources!.limits!)).toEqual(['cpu', 'memory']);
  });

  it('runs engine-sim in its image on a simulated node, with the vLLM-shaped flags', () => {
    const pod = podManifestOf(enginePod(), context({}, inventory('h100-0', { simulated: true })));
    const c = pod.spec!.containers[0];
    expect(c.image).toBe('gpufleet/engine-sim:latest');
    expect(c.command).toEqual(['node']);
    expect(c.args).toEqual(expect.arrayContaining(['serve', '/models/llama-3.1-8b', '--port', '8000', '--tensor-parallel-size', '2']));
    expect(env(c).REPLICA_NAME).toBe('llama-s0-bcdfg-server-0-0');
  });

  it('tags the engine image with engine.version and takes an override as it is', () => {
    const versioned = enginePod({ run: { engine: { ...enginePod().template.engine!.engine!, engine: 'sglang', version: '0.5.2' } } });
    expect(podManifestOf(versioned, context()).spec!.containers[0].image).toBe('lmsysorg/sglang:v0.5.2');
    expect(podManifestOf(versioned, context({ images: { sglang: 'mirror.local/sglang:dev' } })).spec!.containers[0].image).toBe('mirror.local/sglang:dev');
  });

  it("runs llama.cpp's server by its path in the official image, and as named in any other", () => {
    const llama = enginePod({ run: { engine: { ...enginePod().template.engine!.engine!, engine: 'llama-cpp', envFromSecret: {} }, model: '/models/llama.gguf' } });
    expect(podManifestOf(llama, context()).spec!.containers[0]).toMatchObject({ image: 'ghcr.io/ggml-org/llama.cpp:server-cuda', command: ['/app/llama-server'] });
    expect(podManifestOf(llama, context({ images: { 'llama-cpp': 'me/llama:1' } })).spec!.containers[0].command).toEqual(['llama-server']);
  });

  it('refuses a pod the process runtime would refuse: an unknown accelerator, a bad engine spec, a custom engine without an image', () => {
    expect(() => podManifestOf(enginePod({ placement: { acceleratorIds: ['nvidia-9'] } }), context())).toThrow(PodPlanError);
    expect(() => podManifestOf(enginePod({ run: { engine: { ...enginePod().template.engine!.engine!, extraArgs: ['--port', '9'] } } }), context())).toThrow(EngineSpecError);
    const custom = enginePod({ run: { engine: { ...enginePod().template.engine!.engine!, engine: 'custom', customCommand: 'serve {{model_path}} --port {{port}}' } } });
    expect(() => podManifestOf(custom, context())).toThrow(/INVALID_ENGINE_SPEC: engine custom has no default image/);
    expect(podManifestOf(custom, context({ images: { custom: 'me/engine:1' } })).spec!.containers[0].command).toEqual(['serve']);
  });
});

describe('podManifestOf: a GPU instance', () => {
  const pod = podManifestOf(instancePod({ image: 'pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime' }), context());
  const [workload, sshd] = pod.spec!.containers;

  it('has the workload container with the devices and an sshd sidecar in one process namespace', () => {
    expect(pod.spec!.shareProcessNamespace).toBe(true);
    expect(workload.name).toBe('workload');
    expect(workload.image).toBe('pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime');
    expect(workload.resources!.limits!['gpufleet.io/nvidia-gpu']).toBe('1');
    expect(workload.command).toEqual(['/bin/sh', '-c', 'exec sleep infinity']);
    expect(sshd.name).toBe('sshd');
    expect(sshd.resources!.limits).toEqual({ memory: '32768Mi' });
    expect(sshd.resources!.limits).not.toHaveProperty('gpufleet.io/nvidia-gpu');
  });

  it('runs sshd key-only, without root login, on 2222, as a non-root user', () => {
    expect(sshd.ports).toEqual([{ name: 'ssh', containerPort: SSH_PORT, protocol: 'TCP' }]);
    expect(SSHD_SCRIPT).toContain('-o PasswordAuthentication=no');
    expect(SSHD_SCRIPT).toContain('-o PermitRootLogin=no');
    expect(SSHD_SCRIPT).toContain('-o KbdInteractiveAuthentication=no');
    // scp and sftp clients need the sftp subsystem; with no config file sshd has none.
    expect(SSHD_SCRIPT).toContain('-o "Subsystem sftp internal-sftp"');
    // The session environment rides on the keys (environment="…" options), not on the image's home directory.
    expect(SSHD_SCRIPT).toContain('-o PermitUserEnvironment=yes');
    expect(SSHD_SCRIPT).toContain('environment=');
    expect(sshd.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(env(sshd).GPUFLEET_AUTHORIZED_KEYS).toBe('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4 alice@laptop');
  });

  it('gives sessions the instance environment by name, secrets by reference', () => {
    expect(env(sshd).GPUFLEET_SESSION_ENV).toBe('GPUFLEET_POD PROJECT WANDB_API_KEY');
    expect(env(sshd).WANDB_API_KEY).toEqual({ secretKeyRef: { name: 'wandb', key: 'key' } });
    expect(env(workload).WANDB_API_KEY).toEqual({ secretKeyRef: { name: 'wandb', key: 'key' } });
    expect(JSON.stringify(pod)).not.toContain('secret-value');
  });

  it('runs the instance command in the workload container and is labelled as the instance', () => {
    const withCommand = podManifestOf(instancePod({ run: { command: 'jupyter lab --port 8888' } }), context());
    expect(withCommand.spec!.containers[0].command).toEqual(['/bin/sh', '-c', 'jupyter lab --port 8888']);
    expect(withCommand.metadata!.labels).toMatchObject({ [KubeLabels.instance]: 'dev-box', [KubeLabels.ownerUid]: 'uid-box', [KubeLabels.component]: 'instance' });
    expect(withCommand.metadata!.labels).not.toHaveProperty(KubeLabels.endpoint);
  });

  it('refuses an instance without keys or with a device variable, as the process runtime does', () => {
    expect(() => podManifestOf(instancePod({ run: { sshPublicKeys: [] } }), context())).toThrow(/INVALID_INSTANCE/);
    expect(() => podManifestOf(instancePod({ run: { env: { CUDA_VISIBLE_DEVICES: '0' } } }), context())).toThrow(/INVALID_INSTANCE: env.CUDA_VISIBLE_DEVICES/);
  });
});
