import {
  AmdProvider,
  AscendProvider,
  DeviceProvider,
  Fleet,
  HostInfoSource,
  HostProvider,
  NvidiaProvider,
  RdmaProvider,
  SimulatedProvider,
} from '@gpufleet/device-inventory';
import { AgentConfig } from '../config';
import { execCommandRunner } from './command-runner';

export interface ProviderSet {
  providers: DeviceProvider[];
  /** Set when running simulated: the fleet node's own topology and labels. */
  simulated?: SimulatedProvider;
}

export function hasHostInfo(p: DeviceProvider): p is DeviceProvider & HostInfoSource {
  return typeof (p as Partial<HostInfoSource>).readHostInfo === 'function';
}

/**
 * The providers GPUFLEET_PROVIDERS asks for. "auto" keeps every vendor whose tool answers,
 * plus rdma and host; "simulated" stands in for all of them.
 */
export async function buildProviders(config: AgentConfig, loadFleet: (path: string) => Promise<Fleet>): Promise<ProviderSet> {
  const names = new Set<string>(config.GPUFLEET_PROVIDERS);
  if (names.has('simulated')) {
    if (names.size > 1) throw new Error('GPUFLEET_PROVIDERS: "simulated" cannot be combined with other providers');
    if (!config.GPUFLEET_FLEET_FILE) throw new Error('GPUFLEET_FLEET_FILE: required when GPUFLEET_PROVIDERS=simulated');
    const fleet = await loadFleet(config.GPUFLEET_FLEET_FILE);
    if (fleet.cluster !== config.GPUFLEET_CLUSTER) {
      throw new Error(`GPUFLEET_CLUSTER is "${config.GPUFLEET_CLUSTER}" but the fleet file describes cluster "${fleet.cluster}"`);
    }
    const simulated = new SimulatedProvider(fleet, config.NODE_NAME);
    return { providers: [simulated], simulated };
  }
  const run = execCommandRunner();
  const all: Record<string, () => DeviceProvider> = {
    nvidia: () => new NvidiaProvider(run),
    amd: () => new AmdProvider(run),
    ascend: () => new AscendProvider(run),
    rdma: () => new RdmaProvider(config.HOST_ROOT),
    host: () => new HostProvider(config.HOST_ROOT),
  };
  const auto = names.has('auto');
  const chosen: DeviceProvider[] = [];
  for (const [name, make] of Object.entries(all)) {
    if (!auto && !names.has(name)) continue;
    const provider = make();
    // Asked for by name: keep it even when its tool is missing, so the failure is reported.
    if (!auto || (await provider.available())) chosen.push(provider);
  }
  return { providers: chosen };
}
