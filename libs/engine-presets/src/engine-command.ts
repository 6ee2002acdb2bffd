import { EngineSpecError, type EngineCommand, type EngineKind, type EngineSpec, type SpecProblem } from './engine-spec';
import { customBuilder } from './engines/custom';
import { refuseOrBuild, type EngineBuilder, type EngineInvocation } from './engines/engine-builder';
import { llamaCppBuilder } from './engines/llama-cpp';
import { sglangBuilder } from './engines/sglang';
import { trtllmBuilder } from './engines/trtllm';
import { vllmBuilder } from './engines/vllm';
import { validateEngineSpec } from './validation';

const BUILDERS: Readonly<Record<EngineKind, EngineBuilder>> = {
  vllm: vllmBuilder,
  sglang: sglangBuilder,
  trtllm: trtllmBuilder,
  'llama-cpp': llamaCppBuilder,
  custom: customBuilder,
};

/** `--max_batch_size=8` and `--max-batch-size` name the same flag to the engines that accept both spellings. */
function flagName(arg: string): string {
  return arg.split('=')[0].replace(/_/g, '-');
}

function checkExtraArgs(invocation: EngineInvocation, extraArgs: readonly string[]): void {
  const managed = new Set(invocation.args.filter((arg) => arg.startsWith('-')).map(flagName));
  const problems: SpecProblem[] = [];
  extraArgs.forEach((arg, i) => {
    if (arg.startsWith('-') && managed.has(flagName(arg))) {
      problems.push({ field: `extraArgs[${i}]`, message: `${arg.split('=')[0]} is already set by the preset or the spec; change the spec instead` });
    }
  });
  if (problems.length > 0) throw new EngineSpecError(problems);
}

/** Validates the spec and returns what to exec: the engine, its flags and its environment. Throws EngineSpecError. */
export function buildEngineCommand(spec: EngineSpec): EngineCommand {
  validateEngineSpec(spec);
  const invocation = refuseOrBuild(BUILDERS[spec.engine], spec);
  const extraArgs = spec.extraArgs ?? [];
  checkExtraArgs(invocation, extraArgs);
  return {
    command: invocation.command,
    args: [...invocation.args, ...extraArgs],
    env: { ...spec.env, CUDA_VISIBLE_DEVICES: spec.acceleratorIds.join(',') },
  };
}
