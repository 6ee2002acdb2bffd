import { EngineSpecError, type EngineSpec, type SpecProblem } from '../engine-spec';

/** The engine's own part of a command line; extra arguments and the environment are added by buildEngineCommand. */
export interface EngineInvocation {
  readonly command: string;
  readonly args: string[];
  /**
   * Commands run first, in the pod's shell, each of which must succeed before the engine
   * starts (a Ray head on the leader); the engine then replaces the shell (`exec`).
   */
  readonly before?: ReadonlyArray<readonly string[]>;
  /** Prepended to the engine's command: what starts it on every rank of the group (mpirun). */
  readonly launcher?: readonly string[];
  /**
   * False where this pod's process is not the engine (a Ray worker, the SSH server an MPI
   * launcher reaches): the spec's extra arguments go to the engine on the leader only.
   */
  readonly takesExtraArgs?: false;
  /** The environment the engine's multi-node form documents; the spec's env wins over it. */
  readonly env?: Readonly<Record<string, string>>;
}

/** One engine's command-line builder: refuses what the engine cannot do, then emits its flags. */
export interface EngineBuilder {
  /** Spec features this engine cannot honour from a command line; empty when it can. */
  refusals(spec: EngineSpec): SpecProblem[];
  build(spec: EngineSpec): EngineInvocation;
}

export function refuseOrBuild(builder: EngineBuilder, spec: EngineSpec): EngineInvocation {
  const problems = builder.refusals(spec);
  if (problems.length > 0) throw new EngineSpecError(problems);
  return builder.build(spec);
}

export function speculativeTokens(spec: EngineSpec, fallback: number): number {
  return spec.speculative?.numSpeculativeTokens ?? fallback;
}
