import { loadConfig } from '@gpufleet/config';
import { parseFleet, type Fleet } from '@gpufleet/device-inventory';
import { agentConfigSchema } from '../config';
import { natsConnectionName, presentedNodes } from './presented-nodes';

const FLEET = parseFleet(
  `cluster: lab
nodes:
  - namePrefix: h100-
    count: 3
    accelerators: { product: NVIDIA H100 80GB HBM3, count: 8 }
  - namePrefix: cpu-
    count: 12
`,
  'lab.yaml',
);

const loadFleet = async (path: string): Promise<Fleet> => {
  expect(path).toBe('lab.yaml');
  return FLEET;
};

// GPUFLEET_FLEET_FILE must name a readable file at load time; the loader above never reads it.
function config(env: Record<string, string>) {
  return { ...loadConfig(agentConfigSchema, { GPUFLEET_CLUSTER: 'lab', NODE_NAME: 'h100-1', ...env }), GPUFLEET_FLEET_FILE: 'lab.yaml' };
}

const simulated = (env: Record<string, string> = {}) => config({ GPUFLEET_PROVIDERS: 'simulated', ...env });

describe('which nodes an agent presents', () => {
  it('is NODE_NAME alone when SIMULATED_NODES is unset, with or without a fleet file', async () => {
    expect(loadConfig(agentConfigSchema, {}).SIMULATED_NODES).toEqual([]);
    expect(await presentedNodes(simulated(), loadFleet)).toEqual({ names: ['h100-1'], fleet: FLEET, fleetFile: 'lab.yaml' });
    const load = jest.fn(loadFleet);
    expect(await presentedNodes(config({}), load)).toEqual({ names: ['h100-1'] });
    expect(load).not.toHaveBeenCalled();
  });

  it('is every node of the file, in file order, for "*"', async () => {
    const { names } = await presentedNodes(simulated({ SIMULATED_NODES: '*' }), loadFleet);
    expect(names).toEqual(['h100-0', 'h100-1', 'h100-2', ...Array.from({ length: 12 }, (_, i) => `cpu-${i}`)]);
  });

  it('is the listed nodes in the order given, each once, NODE_NAME not among them', async () => {
    const { names } = await presentedNodes(simulated({ SIMULATED_NODES: 'cpu-3, h100-2,cpu-3' }), loadFleet);
    expect(names).toEqual(['cpu-3', 'h100-2']);
  });

  it('names the variable, the unknown nodes and a few valid ones when a node is not in the file', async () => {
    await expect(presentedNodes(simulated({ SIMULATED_NODES: 'h100-0,h100-9,gpu-0' }), loadFleet)).rejects.toThrow(
      'SIMULATED_NODES: the fleet file lab.yaml has no nodes "h100-9", "gpu-0"; its nodes are h100-0 … h100-2, cpu-0 … cpu-11 ("*" presents them all)',
    );
    await expect(presentedNodes(simulated({ SIMULATED_NODES: 'nosuch' }), loadFleet)).rejects.toThrow('has no node "nosuch";');
  });

  it('refuses "*" together with node names', async () => {
    await expect(presentedNodes(simulated({ SIMULATED_NODES: '*,h100-0' }), loadFleet)).rejects.toThrow(
      'SIMULATED_NODES: "*" already means every node of lab.yaml; give "*" or node names, not both',
    );
  });

  it('refuses SIMULATED_NODES without the simulated provider', async () => {
    await expect(presentedNodes(config({ SIMULATED_NODES: '*' }), loadFleet)).rejects.toThrow(
      'SIMULATED_NODES: only valid with GPUFLEET_PROVIDERS=simulated, not "auto"; unset it to report NODE_NAME',
    );
  });

  it('keeps the checks of the simulated provider: alone, with a fleet file of this cluster', async () => {
    await expect(presentedNodes(simulated({ GPUFLEET_PROVIDERS: 'simulated,nvidia' }), loadFleet)).rejects.toThrow(
      'GPUFLEET_PROVIDERS: "simulated" cannot be combined with other providers',
    );
    await expect(presentedNodes({ ...simulated(), GPUFLEET_FLEET_FILE: undefined }, loadFleet)).rejects.toThrow(
      'GPUFLEET_FLEET_FILE: required when GPUFLEET_PROVIDERS=simulated',
    );
    await expect(presentedNodes({ ...simulated(), GPUFLEET_CLUSTER: 'dev' }, loadFleet)).rejects.toThrow(
      'GPUFLEET_CLUSTER is "dev" but the fleet file describes cluster "lab"',
    );
  });

  it('rejects a SIMULATED_NODES item that is neither "*" nor a node name when the configuration loads', () => {
    expect(() => loadConfig(agentConfigSchema, { SIMULATED_NODES: 'h100-0,GPU_1' })).toThrow(
      'SIMULATED_NODES: expected a comma-separated list of string, got "h100-0,GPU_1" (item 2: expected "*" or a node name)',
    );
  });
});

describe('the NATS connection name', () => {
  it('is the node for one node, and the first node plus how many more for many', () => {
    expect(natsConnectionName(['h100-0'])).toBe('device-discovery@h100-0');
    expect(natsConnectionName(['h100-0', 'h100-1', 'cpu-0'])).toBe('device-discovery@h100-0+2');
  });
});
