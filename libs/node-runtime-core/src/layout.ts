import { join } from 'path';
import { podId, type PodRef } from '@gpufleet/contracts';

/**
 * Where a node runtime keeps what it needs across its own restarts, under its state directory:
 *
 * ```text
 * <stateDir>/processes.json                                  the ProcessTable state file
 * <stateDir>/pods/<ns>/<workload>/<pod_set>/<replica>/<pod>/ one directory per pod:
 *     pod.log                                                the engine's (or instance command's) output
 *     sshd.log                                               an instance's sshd
 * <stateDir>/instances/<ns>.<workload>.<pod_set>.<replica>.<pod>/  an instance's sshd: host key, config, work/
 * ```
 *
 * Every name in a pod reference is a DNS-1123 label (no '/' or '.'), so these paths cannot
 * leave the state directory.
 */
export function stateFilePath(stateDir: string): string {
  return join(stateDir, 'processes.json');
}

export function podDir(stateDir: string, ref: Omit<PodRef, 'node'>): string {
  return join(stateDir, 'pods', podId(ref));
}

/** The engine's or the instance command's stdout and stderr. */
export function podLogFile(stateDir: string, ref: Omit<PodRef, 'node'>): string {
  return join(podDir(stateDir, ref), 'pod.log');
}

export function sshdLogFile(stateDir: string, ref: Omit<PodRef, 'node'>): string {
  return join(podDir(stateDir, ref), 'sshd.log');
}

/** `SshdInstance` base directory: each instance lives in `<instancesDir>/<instanceName>`. */
export function instancesDir(stateDir: string): string {
  return join(stateDir, 'instances');
}

/** A name `SshdInstance` accepts (letters, digits, '.', '-'), unique on the node. */
export function instanceName(ref: Omit<PodRef, 'node'>): string {
  return `${ref.namespace}.${ref.workload}.${ref.podSet}.${ref.replica}.${ref.pod}`;
}

/** Where an instance's sessions (and its command) start: `SshdInstance`'s default work directory. */
export function instanceWorkDir(stateDir: string, ref: Omit<PodRef, 'node'>): string {
  return join(instancesDir(stateDir), instanceName(ref), 'work');
}

/** Process ids in the ProcessTable: an engine is the pod itself; an instance has an sshd and maybe a command. */
export function engineProcessId(ref: Omit<PodRef, 'node'>): string {
  return podId(ref);
}

export function instanceCommandProcessId(ref: Omit<PodRef, 'node'>): string {
  return `${podId(ref)}/command`;
}

/** A sandboxed engine's own writable directory (its cwd and HOME): the pod directory itself holds the runtime's logs. */
export function podWorkDir(stateDir: string, ref: Omit<PodRef, 'node'>): string {
  return join(podDir(stateDir, ref), 'work');
}
