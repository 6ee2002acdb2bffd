import { EngineSpecError, type EngineCommand, type EngineKind, type EngineSpec, type SpecProblem } from './engine-spec';
import { customBuilder } from './engines/custom';
import { shellLine } from './engines/group';
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
  const extraArgs = invocation.takesExtraArgs === false ? [] : (spec.extraArgs ?? []);
  checkExtraArgs(invocation, extraArgs);
  const engine = [...(invocation.launcher ?? []), invocation.command, ...invocation.args, ...extraArgs];
  const env = { ...invocation.env, ...spec.env, CUDA_VISIBLE_DEVICES: spec.acceleratorIds.join(',') };
  if (invocation.before && invocation.before.length > 0) {
    // One process per pod: the runtime supervises the shell, which becomes the engine.
    const script = [...invocation.before.map(shellLine), `exec ${shellLine(engine)}`].join(' && ');
    return { command: '/bin/sh', args: ['-c', script], env };
  }
  return { command: engine[0], args: engine.slice(1), env };
}
