import {
  AmdProvider,
  AscendProvider,
  DeviceProvider,
  HostInfoSource,
  HostProvider,
  NvidiaProvider,
  RdmaProvider,
  SimulatedProvider,
} from '@gpufleet/device-inventory';
import { AgentConfig } from '../config';
import { execCommandRunner } from './command-runner';
import type { PresentedNodes } from './presented-nodes';

export interface ProviderSet {
  providers: DeviceProvider[];
  /** Set when running simulated: the fleet node's own topology and labels. */
  simulated?: SimulatedProvider;
}

export function hasHostInfo(p: DeviceProvider): p is DeviceProvider & HostInfoSource {
  return typeof (p as Partial<HostInfoSource>).readHostInfo === 'function';
}

/**
 * The providers GPUFLEET_PROVIDERS asks for on one presented node. "auto" keeps every vendor
 * whose tool answers, plus rdma and host; "simulated" stands in for all of them.
 */
export async function buildProviders(config: AgentConfig, presented: PresentedNodes, nodeName: string): Promise<ProviderSet> {
  if (presented.fleet) {
    const simulated = new SimulatedProvider(presented.fleet, nodeName);
    return { providers: [simulated], simulated };
  }
  const names = new Set<string>(config.GPUFLEET_PROVIDERS);
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
