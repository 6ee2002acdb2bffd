import type { EngineSpec, SpecProblem } from '../engine-spec';
import type { EngineBuilder, EngineInvocation } from './engine-builder';

function placeholderValues(spec: EngineSpec): Record<string, string> {
  return {
    model_path: spec.modelPath,
    port: String(spec.port),
    gpu_ids: spec.acceleratorIds.join(','),
    served_model_name: spec.servedModelName,
    tensor_parallel_size: String(spec.acceleratorsPerPod),
  };
}

const PLACEHOLDER = /\{\{\s*([^}]*?)\s*\}\}/g;

function tokens(template: string): string[] {
  return template.trim().split(/\s+/);
}

export const customBuilder: EngineBuilder = {
  refusals(spec: EngineSpec): SpecProblem[] {
    const problems: SpecProblem[] = [];
    const template = spec.customTemplate ?? '';
    const known = Object.keys(placeholderValues(spec));
    for (const [, name] of template.matchAll(PLACEHOLDER)) {
      if (!known.includes(name)) problems.push({ field: 'customTemplate', message: `unknown placeholder {{${name}}} (known: ${known.map((k) => `{{${k}}}`).join(', ')})` });
    }
    if (!/\{\{\s*port\s*\}\}/.test(template)) problems.push({ field: 'customTemplate', message: 'expected {{port}} so the engine listens where the fleet routes to' });
    if ((tokens(template)[0] ?? '').includes('{{')) problems.push({ field: 'customTemplate', message: 'the first word is the program and may not be a placeholder' });
    if (spec.role !== 'server') problems.push({ field: 'role', message: `a custom engine has no preset for the ${spec.role} role; use role server` });
    if (spec.speculative) problems.push({ field: 'speculative', message: 'a custom engine takes speculative decoding flags in its template' });
    if (spec.kvOffload) problems.push({ field: 'kvOffload', message: 'a custom engine takes KV offload flags in its template' });
    return problems;
  },

  build(spec: EngineSpec): EngineInvocation {
    const values = placeholderValues(spec);
    // Substituted per word, so a model path with spaces stays one argument.
    const [command, ...args] = tokens(spec.customTemplate ?? '').map((word) => word.replace(PLACEHOLDER, (_match, name: string) => values[name]));
    return { command, args };
  },
};
