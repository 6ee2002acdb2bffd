import type { Accelerator, DeviceLink, Nic } from '@gpufleet/contracts';

/**
 * What one detection pass of a provider found. Providers report only what they own:
 * a GPU vendor provider reports accelerators (and the links among them and to NICs),
 * the rdma provider NICs, the host provider CPU/memory/OS.
 */
export interface DetectionResult {
  accelerators?: Accelerator[];
  nics?: Nic[];
  links?: DeviceLink[];
  driverVersion?: string;
  runtimeVersion?: string;
}

/**
 * A source of devices on a node (nvidia, amd, ascend, rdma, host, simulated).
 * `detect` throws when the pass failed (tool crashed, unreadable output): the agent then
 * keeps the last good result. Returning an empty result means "nothing of mine is here".
 */
export interface DeviceProvider {
  readonly name: string;
  /** False when the provider cannot run on this node at all (tool not installed). */
  available(): Promise<boolean>;
  detect(): Promise<DetectionResult>;
}

/** Runs a command and returns its stdout; injectable so providers can be tested on fixtures. */
export type CommandRunner = (command: string, args: string[]) => Promise<string>;
