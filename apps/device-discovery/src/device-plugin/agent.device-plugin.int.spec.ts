// The whole agent with DEVICE_PLUGIN=on: a simulated H100 node's GPUs reach the kubelet
// simulator through registration and ListAndWatch.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@gpufleet/config';
import { DevicePluginKubelet, startNats, type RunningServer } from '@gpufleet/testing';
import { startAgent, type AgentUnderTest } from '../__fixtures__/agent-harness';
import { agentConfigSchema } from '../config';

const FLEET = `cluster: dp
nodes:
  - namePrefix: h100-
    count: 2
    accelerators: { product: NVIDIA H100 80GB HBM3, count: 8 }
`;

describe('agent with DEVICE_PLUGIN=on', () => {
  let nats: RunningServer;
  let dir: string;
  let kubelet: DevicePluginKubelet;
  let agent: AgentUnderTest | undefined;

  beforeAll(async () => {
    nats = await startNats();
    dir = mkdtempSync(join(tmpdir(), 'gpufleet-agent-dp-it-'));
    writeFileSync(join(dir, 'fleet.yaml'), FLEET);
  });
  beforeEach(async () => {
    kubelet = await DevicePluginKubelet.start();
  });
  afterEach(async () => {
    await agent?.close();
    agent = undefined;
    await kubelet.stop();
  });
  afterAll(async () => {
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers gpufleet.io/nvidia-gpu with the kubelet and lists the node\'s eight GPUs, Healthy', async () => {
    agent = await startAgent({
      GPUFLEET_CLUSTER: 'dp',
      NATS_URL: nats.url,
      GPUFLEET_PROVIDERS: 'simulated',
      GPUFLEET_FLEET_FILE: join(dir, 'fleet.yaml'),
      NODE_NAME: 'h100-1',
      DEVICE_PLUGIN: 'on',
      DEVICE_PLUGIN_DIR: kubelet.dir,
    });
    const devices = await kubelet.devices('gpufleet.io/nvidia-gpu');
    expect(devices).toHaveLength(8);
    expect(devices.every((d) => d.health === 'Healthy')).toBe(true);
    expect(kubelet.registrations[0]).toMatchObject({ version: 'v1beta1', endpoint: 'gpufleet-nvidia-gpu.sock', resourceName: 'gpufleet.io/nvidia-gpu' });
    const [r] = await kubelet.allocate('gpufleet.io/nvidia-gpu', [devices[2].ID]);
    expect(r.envs.NVIDIA_VISIBLE_DEVICES).toBe(devices[2].ID);
  });

  it('is off by default and refused with several SIMULATED_NODES', () => {
    expect(loadConfig(agentConfigSchema, {}).DEVICE_PLUGIN).toBe('off');
    expect(() => loadConfig(agentConfigSchema, { DEVICE_PLUGIN: 'on', GPUFLEET_PROVIDERS: 'simulated', SIMULATED_NODES: '*' })).toThrow(
      'DEVICE_PLUGIN: "on" serves the kubelet of one node, but SIMULATED_NODES presents several (*)',
    );
  });
});
