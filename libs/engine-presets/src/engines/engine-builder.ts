import { EngineSpecError, type EngineSpec, type SpecProblem } from '../engine-spec';

/** The engine's own part of a command line; extra arguments and the environment are added by buildEngineCommand. */
export interface EngineInvocation {
  readonly command: string;
  readonly args: string[];
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
