/**
 * What every engine's multi-node form shares: the parallel layout of the gang, the collectives'
 * network environment, and addresses as the engines want them written.
 */
import type { EngineGroup, EngineSpec, ParallelLayout } from '../engine-spec';

/** Every accelerator of the gang: pods × accelerators per pod. */
export function gangAccelerators(spec: EngineSpec, group: EngineGroup): number {
  return group.size * spec.acceleratorsPerPod;
}

/**
 * Tensor parallel within an NVLink domain, pipeline parallel across the network: the engines'
 * own advice for nodes joined by InfiniBand (tensor parallel = accelerators per node, pipeline
 * parallel = nodes), and one tensor-parallel group over the whole gang when its pods share an
 * NVLink fabric. A layout chosen elsewhere (a memory estimate) wins.
 */
export function groupLayout(spec: EngineSpec, group: EngineGroup): ParallelLayout {
  if (group.layout) return group.layout;
  if (group.nvlinkAcrossPods) return { tensorParallel: gangAccelerators(spec, group), pipelineParallel: 1 };
  return { tensorParallel: spec.acceleratorsPerPod, pipelineParallel: group.size };
}

/**
 * The interfaces NCCL and Gloo bootstrap over and the HCAs NCCL's RDMA transport uses: without
 * them NCCL picks the first interface it finds (often a management NIC or docker0) and the
 * group hangs or crawls.
 */
export function groupNetworkEnv(group: EngineGroup): Record<string, string> {
  const env: Record<string, string> = {};
  const network = group.network;
  if (network && network.socketInterfaces.length > 0) {
    env.NCCL_SOCKET_IFNAME = network.socketInterfaces.join(',');
    env.GLOO_SOCKET_IFNAME = network.socketInterfaces.join(',');
  }
  if (network && network.ibHcas.length > 0) env.NCCL_IB_HCA = network.ibHcas.join(',');
  return env;
}

/** `host:port` with an IPv6 literal in brackets, as Ray, SGLang and torch.distributed parse it. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** One word for /bin/sh: left bare when it holds only characters the shell gives no meaning. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function shellLine(words: readonly string[]): string {
  return words.map(shellWord).join(' ');
}
