import { loadConfig } from '@gpufleet/config';
import { engineSimEntry, instanceListenAddress, nodeNamesOf, nodeRuntimeConfigSchema, REPO_ROOT, runtimeUrlOf, stateDirOf } from './config';
import { podBaseEnv } from './runtime/node-pods';

describe('node runtime configuration', () => {
  it('needs NODE_NAME, and defaults the rest', () => {
    expect(() => loadConfig(nodeRuntimeConfigSchema, {})).toThrow(/NODE_NAME: required but not set/);
    const config = loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'h100-0' });
    expect(config).toMatchObject({ HTTP_PORT: 8088, GRPC_PORT: 50058, ADVERTISE_HOST: '127.0.0.1', ENGINE_MODE: 'auto', STOP_GRACE_S: 30 });
    expect(stateDirOf(config)).toBe('/var/lib/gpufleet/node-runtime/h100-0');
    expect(engineSimEntry(config)).toEqual({ command: 'node', args: ['-r', 'reflect-metadata', '-r', '@swc-node/register', `${REPO_ROOT}/apps/engine-sim/src/main.ts`] });
    expect(runtimeUrlOf(config)).toBe('http://127.0.0.1:8088');
  });

  it('refuses a node name with dots (it is one token of pods-bucket keys) and a relative state directory', () => {
    expect(() => loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'gpu-1.example.com' })).toThrow(/NODE_NAME: expected a DNS-1123 label/);
    expect(() => loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'n', STATE_DIR: 'state' })).toThrow(/STATE_DIR: expected an absolute path/);
    expect(() => loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'n', ENGINE_MODE: 'fake' })).toThrow(/ENGINE_MODE: expected one of auto, simulated, real/);
  });

  it('runs several simulated nodes with SIMULATED_NODES: one state directory and one runtime_url per node', () => {
    const one = loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'h100-0' });
    expect(nodeNamesOf(one)).toEqual(['h100-0']);
    const many = loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'sim', SIMULATED_NODES: 'gpu-0,gpu-1,gpu-0', STATE_DIR: '/srv/nodes', HTTP_PORT: '9000' });
    expect(nodeNamesOf(many)).toEqual(['gpu-0', 'gpu-1']);
    expect(stateDirOf(many, 'gpu-1')).toBe('/srv/nodes/gpu-1');
    expect(stateDirOf({ NODE_NAME: 'sim', STATE_DIR: undefined, SIMULATED_NODES: ['gpu-0'] }, 'gpu-0')).toBe('/var/lib/gpufleet/node-runtime/gpu-0');
    expect(runtimeUrlOf(many, 'gpu-1')).toBe('http://127.0.0.1:9000/nodes/gpu-1');
    expect(runtimeUrlOf(one, 'h100-0')).toBe('http://127.0.0.1:8088');
    expect(() => loadConfig(nodeRuntimeConfigSchema, { NODE_NAME: 'sim', SIMULATED_NODES: 'gpu-0,gpu.1' })).toThrow(/SIMULATED_NODES: expected .*DNS-1123 label/);
  });

  it('lets instances listen beyond loopback only when the advertised host is not loopback', () => {
    expect(instanceListenAddress({ ADVERTISE_HOST: '127.0.0.1' })).toBe('127.0.0.1');
    expect(instanceListenAddress({ ADVERTISE_HOST: 'localhost' })).toBe('127.0.0.1');
    expect(instanceListenAddress({ ADVERTISE_HOST: '10.1.2.3' })).toBe('0.0.0.0');
    expect(runtimeUrlOf({ ADVERTISE_HOST: 'fd00::5', HTTP_PORT: 8088 })).toBe('http://[fd00::5]:8088');
  });

  it('starts pod processes without the runtime’s own settings or device visibility', () => {
    const base = podBaseEnv({ PATH: '/usr/bin', HOME: '/root', NATS_URL: 'nats://x', NATS_TOKEN: 's3cret', HTTP_PORT: '8088', CUDA_VISIBLE_DEVICES: '0,1,2,3', SWC_NODE_PROJECT: '/app/tsconfig.json' });
    expect(base).toEqual({ PATH: '/usr/bin', HOME: '/root', SWC_NODE_PROJECT: '/app/tsconfig.json' });
  });
});
