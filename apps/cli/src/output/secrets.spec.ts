import { GPUInstance, ModelDeployment, SecretMetadata } from '@gpufleet/contracts';
import { describeDeployment } from './deployments';
import { renderTable } from './format';
import { describeInstance } from './instances';
import { envLine, secretColumns } from './secrets';

const ref = (name: string, key: string) => ({ name, key });

describe('secrets in CLI output', () => {
  it('shows references as secret:NAME/KEY after the plain variables', () => {
    expect(envLine({ A: '1' }, { HF_TOKEN: ref('hf-token', 'token') })).toBe('A=1 HF_TOKEN=secret:hf-token/token');
  });

  it('describes a deployment’s and an instance’s references', () => {
    const d = ModelDeployment.fromPartial({
      spec: { name: 'chat', namespace: 'team-a', model: 'm', engine: { engine: 'vllm', envFromSecret: { API_KEY: ref('keys', 'engine') } }, roles: [{ role: 'server', replicas: 1, envFromSecret: { HF_TOKEN: ref('hf', 'token') } }] },
    });
    const text = describeDeployment(d, 0);
    expect(text).toContain('Engine env:    API_KEY=secret:keys/engine');
    expect(text).toContain('    env:  HF_TOKEN=secret:hf/token');
    const i = GPUInstance.fromPartial({ spec: { name: 'dev', namespace: 'team-a', env: { A: '1' }, envFromSecret: { WANDB_API_KEY: ref('wandb', 'key') } } });
    expect(describeInstance(i, 0)).toContain('Env:           A=1 WANDB_API_KEY=secret:wandb/key');
  });

  it('lists secrets with their key names (wide), never values', () => {
    const s = SecretMetadata.fromPartial({ name: 'hf', namespace: 'team-a', keys: ['a', 'token'], sizeBytes: 20, generation: 2 });
    const wide = renderTable([s], secretColumns, true);
    expect(wide.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+KEYS\s+KEY NAMES\s+SIZE\s+GENERATION\s+AGE$/);
    expect(wide.split('\n')[1]).toMatch(/^team-a\s+hf\s+2\s+a,token\s+20B\s+2\s+/);
  });
});
