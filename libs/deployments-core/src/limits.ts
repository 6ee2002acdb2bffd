import { problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';

/**
 * Size and count bounds of what a deployment or an instance carries into the store and onto a
 * node: far above any real use, far below what would make a record approach NATS's max_payload
 * (1 MiB) or an engine's command line exceed the kernel's argument limit.
 */
export const LIMITS = {
  labels: 64,
  labelKey: 128,
  labelValue: 256,
  env: 128,
  envValue: 32 * 1024,
  envTotal: 256 * 1024,
  args: 128,
  arg: 4096,
  /** Accelerators of one pod: more than any node has. */
  acceleratorsPerPod: 1024,
} as const;

/** Variables the runtime sets from the allocation; a pod that set them would see other devices. */
export const DEVICE_VISIBILITY_ENV: readonly string[] = ['CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', 'ASCEND_RT_VISIBLE_DEVICES'];

/** Label keys only gpufleet writes (ownership of workloads). */
const RESERVED_LABEL_PREFIX = 'gpufleet.io/';

export function checkLabels(field: string, labels: Readonly<Record<string, string>>): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const entries = Object.entries(labels);
  if (entries.length > LIMITS.labels) problems.push(problem(field, `at most ${LIMITS.labels} labels`, `${entries.length}`));
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > LIMITS.labelKey) problems.push(problem(`${field}`, `label keys of 1-${LIMITS.labelKey} characters`, `${key.length} characters`));
    else if (key.startsWith(RESERVED_LABEL_PREFIX)) problems.push(problem(`${field}["${key}"]`, `no "${RESERVED_LABEL_PREFIX}" key: gpufleet sets those itself`, shown(value)));
    if (value.length > LIMITS.labelValue) problems.push(problem(`${field}["${key}"]`, `a value of at most ${LIMITS.labelValue} characters`, `${value.length} characters`));
  }
  return problems;
}

export function checkEnv(field: string, env: Readonly<Record<string, string>>): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const entries = Object.entries(env);
  if (entries.length > LIMITS.env) problems.push(problem(field, `at most ${LIMITS.env} variables`, `${entries.length}`));
  let total = 0;
  for (const [name, value] of entries) {
    total += name.length + value.length;
    if (value.length > LIMITS.envValue) problems.push(problem(`${field}.${name}`, `a value of at most ${LIMITS.envValue / 1024} KiB`, `${value.length} characters`));
  }
  if (total > LIMITS.envTotal) problems.push(problem(field, `at most ${LIMITS.envTotal / 1024} KiB of names and values in all`, `${Math.ceil(total / 1024)} KiB`));
  return problems;
}

export function checkArgs(field: string, args: readonly string[]): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  if (args.length > LIMITS.args) problems.push(problem(field, `at most ${LIMITS.args} arguments`, `${args.length}`));
  args.forEach((arg, i) => {
    if (arg.length > LIMITS.arg) problems.push(problem(`${field}[${i}]`, `an argument of at most ${LIMITS.arg} characters`, `${arg.length} characters`));
  });
  return problems;
}
