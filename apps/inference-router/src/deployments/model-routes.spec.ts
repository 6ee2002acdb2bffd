import { ModelDeployment, type ReplicaStatus } from '@gpufleet/contracts';
import { deploymentRoute, servedModelName } from './model-routes';

function replica(role: string, state: string, endpoint: string): ReplicaStatus {
  return { role, ordinal: 0, workload: 'w', state, node: 'n', endpoint, acceleratorIds: [], restarts: 0, message: '', updated: true, logsUrl: '' };
}

function deployment(roles: { role: string; replicas: number }[], replicas: ReplicaStatus[], servedModelName = 'llama'): ModelDeployment {
  return ModelDeployment.fromPartial({
    spec: { name: 'd', namespace: 'ns', model: 'meta-llama/Llama-3.1-8B', servedModelName, roles: roles.map((r) => ({ ...r, size: 1 })) },
    status: { replicas },
  });
}

describe('servedModelName', () => {
  it('is spec.servedModelName, else the last path segment of the model', () => {
    expect(servedModelName(deployment([], [], 'chat'))).toBe('chat');
    expect(servedModelName(deployment([], [], ''))).toBe('Llama-3.1-8B');
    expect(servedModelName(ModelDeployment.fromPartial({ spec: { model: '/models/qwen/' } }))).toBe('qwen');
  });
});

describe('deploymentRoute', () => {
  it('lists Ready server replicas with endpoints, once each, without trailing slashes', () => {
    const route = deploymentRoute(
      'ns.d',
      deployment(
        [{ role: 'server', replicas: 4 }],
        [
          replica('server', 'Ready', 'http://10.0.0.1:8000/'),
          replica('server', 'Starting', 'http://10.0.0.2:8000'),
          replica('server', 'Ready', ''),
          replica('server', 'Ready', 'http://10.0.0.1:8000'),
          replica('', 'Ready', 'http://10.0.0.3:8000'),
        ],
      ),
    );
    expect(route).toEqual({
      deployment: 'ns.d',
      model: 'llama',
      desired: 4,
      disaggregated: false,
      prefillEndpoints: [],
      prefillDesired: 0,
      endpoints: [
        { endpoint: 'http://10.0.0.1:8000', deployment: 'ns.d', role: 'server' },
        { endpoint: 'http://10.0.0.3:8000', deployment: 'ns.d', role: 'server' },
      ],
    });
  });

  it('answers a prefill/decode deployment’s requests on its decode replicas, prefilled on its prefill replicas', () => {
    const route = deploymentRoute(
      'ns.d',
      deployment(
        [
          { role: 'prefill', replicas: 2 },
          { role: 'decode', replicas: 2 },
        ],
        [
          replica('prefill', 'Ready', 'http://p:1'),
          replica('prefill', 'Starting', 'http://p:2'),
          replica('decode', 'Ready', 'http://d:1'),
          replica('decode', 'Failed', 'http://d:2'),
        ],
      ),
    );
    expect(route?.disaggregated).toBe(true);
    expect(route?.desired).toBe(2);
    expect(route?.endpoints).toEqual([{ endpoint: 'http://d:1', deployment: 'ns.d', role: 'decode' }]);
    expect(route?.prefillDesired).toBe(2);
    expect(route?.prefillEndpoints).toEqual([{ endpoint: 'http://p:1', deployment: 'ns.d', role: 'prefill' }]);
  });

  it('holds back decode replicas while no prefill replica is Ready', () => {
    const route = deploymentRoute(
      'ns.d',
      deployment(
        [
          { role: 'prefill', replicas: 1 },
          { role: 'decode', replicas: 1 },
        ],
        [replica('prefill', 'Starting', 'http://p:1'), replica('decode', 'Ready', 'http://d:1')],
      ),
    );
    expect(route?.endpoints).toEqual([]);
    expect(route?.prefillEndpoints).toEqual([]);
  });

  it('ignores endpoints that are not http(s)://host:port', () => {
    const route = deploymentRoute('ns.d', deployment([{ role: 'server', replicas: 2 }], [replica('server', 'Ready', 'tcp://x:1'), replica('server', 'Ready', 'http://x:1/v1')]));
    expect(route?.endpoints).toEqual([]);
  });

  it('has no route without a spec', () => {
    expect(deploymentRoute('ns.d', ModelDeployment.fromPartial({}))).toBeUndefined();
  });
});
