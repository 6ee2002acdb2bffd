import { join } from 'path';
import type { PodPlacement } from '@gpufleet/contracts';
import type { ProcessSandbox, ResourceLimits, SandboxBind } from '@gpufleet/process-spec';
import type { PodDevices } from './pod-devices';

/** How this runtime sandboxes pods; absent when it does not (SANDBOX=off, or a host that cannot). */
export interface PodSandboxContext {
  /** The first uid of the range the runtime owns: a pod's uid is `uidBase + port` (`podUid`). */
  readonly uidBase: number;
  /** Where the node's device nodes are: /dev, or a simulated node's placeholders. */
  readonly deviceRoot: string;
  /** Directories no pod sees: the runtime's state (every pod's logs, instances, the state file). */
  readonly hidden: readonly string[];
  /** cgroup limits from each pod's request, when the host has cgroups the runtime can write. */
  readonly limits?: { readonly pidsMax: number };
}

/** Who a sandboxed pod runs as. */
export interface PodIdentity {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** uids `uidBase` … `uidBase + POD_UID_SPAN - 1` are the runtime's. */
export const POD_UID_SPAN = 65_536;

/**
 * A pod's uid: its port is unique on the host and the pod's for life (across replacements and
 * runtime restarts), so this uid is too, without a table to keep: the same pod gets the same
 * sandbox spec, and adoption keeps it running.
 */
export function podIdentity(ctx: PodSandboxContext, port: number, home: string): PodIdentity {
  const uid = ctx.uidBase + port;
  return { name: `gpufleet-${uid}`, uid, gid: uid, home };
}

/** The passwd and group files the runtime writes for the pod (in its directory, not writable by it), bound over /etc's. */
export function identityBinds(podDirectory: string): SandboxBind[] {
  return [
    { source: join(podDirectory, 'passwd'), target: '/etc/passwd' },
    { source: join(podDirectory, 'group'), target: '/etc/group' },
  ];
}

/** The sandbox of one pod process: its identity, its devices' nodes, `writable` and nothing else of the runtime's. */
export function podSandbox(ctx: PodSandboxContext, identity: PodIdentity, devices: PodDevices, podDirectory: string, writable: readonly string[]): ProcessSandbox {
  return {
    uid: identity.uid,
    gid: identity.gid,
    writable,
    hidden: ctx.hidden,
    devices: devices.nodes.map((n) => ({ source: join(ctx.deviceRoot, n), target: join('/dev', n) })),
    readOnly: identityBinds(podDirectory),
  };
}

/**
 * The cgroup limits of a pod's processes: the memory and vCPUs its placement holds (what the
 * scheduler counted against the node), and the runtime's cap on processes. A request of 0 is no
 * limit of that kind.
 */
export function podLimits(ctx: PodSandboxContext, placement: PodPlacement): ResourceLimits | undefined {
  if (!ctx.limits) return undefined;
  return {
    ...(placement.memoryMib > 0 ? { memoryBytes: placement.memoryMib * 1024 * 1024 } : {}),
    ...(placement.vcpu > 0 ? { cpuMillis: placement.vcpu * 1000 } : {}),
    pids: ctx.limits.pidsMax,
  };
}
