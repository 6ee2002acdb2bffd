/**
 * Process mode on a simulated fleet runs engine-sim in place of the engine binary. engine-sim
 * reads vLLM's flags, so every engine's spec is mapped onto the vLLM-shaped subset it models:
 * the model, the served name, the port, the tensor-parallel size and the concurrency limit.
 */
import { DEFAULT_ENGINE_HOST, type EngineCommand, type EngineSpec } from './engine-spec';
import { buildEngineCommand } from './engine-command';
import { presetFor } from './presets';

/** How to start engine-sim on this machine, e.g. `{ command: 'node', args: ['dist/apps/engine-sim/main.js'] }`. */
export interface EngineSimEntry {
  readonly command: string;
  readonly args: readonly string[];
}

export function simulatedEngineCommand(spec: EngineSpec, engineSimEntry: EngineSimEntry): EngineCommand {
  // The same validation and refusals as the real engine, so a spec that passes in simulation runs for real.
  const real = buildEngineCommand(spec);
  const args = [
    ...engineSimEntry.args,
    'serve',
    spec.modelPath,
    '--served-model-name',
    spec.servedModelName,
    '--host',
    spec.host ?? DEFAULT_ENGINE_HOST,
    '--port',
    String(spec.port),
    '--tensor-parallel-size',
    String(spec.acceleratorsPerPod),
  ];
  // A custom engine has no preset; engine-sim keeps its own default concurrency.
  if (spec.engine !== 'custom') args.push('--max-num-seqs', String(presetFor(spec.engine, spec.mode, spec.acceleratorMemoryMib).maxConcurrency));
  return { command: engineSimEntry.command, args, env: real.env };
}
