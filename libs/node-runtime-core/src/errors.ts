/**
 * Why a pod cannot be started on this node. The runtime reports it as the pod's `Failed`
 * status (`message`), never as a crash of its own; the pod is planned again on the next change
 * (a new inventory, a fixed template), so a cause that goes away lets the pod start.
 */
export type PodPlanErrorReason =
  /** The placement names an accelerator the node's inventory does not list. */
  | 'UNKNOWN_ACCELERATOR'
  /** The placement names a MIG partition the accelerator does not have (yet). */
  | 'MIG_PARTITION_MISSING'
  /** The devices of one pod cannot be exposed together (mixed vendors, MIG on a non-NVIDIA GPU). */
  | 'INVALID_DEVICES'
  /** The engine template cannot become a command line (engine-presets' refusals). */
  | 'INVALID_ENGINE_SPEC'
  /** The instance template cannot become an sshd (keys, environment). */
  | 'INVALID_INSTANCE'
  /** A worker of a multi-node replica waits for its leader's rendezvous address (reported Starting). */
  | 'GROUP_LEADER_PENDING'
  /** A leader that launches every rank itself (TRT-LLM's mpirun) waits for its workers' addresses (reported Starting). */
  | 'GROUP_PEERS_PENDING'
  /** The engine's artifact has no Ready copy on this node yet (reported Starting, with the download's progress). */
  | 'WEIGHTS_PENDING'
  /** The node's cache could not fetch the engine's artifact: the copy is Failed, with its reason. */
  | 'WEIGHTS_FAILED'
  /** An env_from_secret reference names a Secret or key that does not exist (yet). */
  | 'SECRET_NOT_FOUND'
  /** The workload has no template this runtime knows how to run. */
  | 'UNSUPPORTED_TEMPLATE';

/**
 * Reasons that say a pod waits for something that is on its way (its group's addresses, its
 * weights), not that it failed: the pod is reported `Starting` with the message.
 */
export const WAITING_REASONS: ReadonlySet<PodPlanErrorReason> = new Set<PodPlanErrorReason>(['GROUP_LEADER_PENDING', 'GROUP_PEERS_PENDING', 'WEIGHTS_PENDING']);

export class PodPlanError extends Error {
  override readonly name = 'PodPlanError';

  constructor(
    readonly reason: PodPlanErrorReason,
    sentence: string,
  ) {
    super(`${reason}: ${sentence}`);
  }
}
