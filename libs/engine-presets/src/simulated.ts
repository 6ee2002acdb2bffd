/**
 * Process mode on a simulated fleet runs engine-sim in place of the engine binary. engine-sim
 * reads vLLM's flags, so every engine's spec is mapped onto the vLLM-shaped subset it models:
 * the model, the served name, the port, the tensor-parallel size and the concurrency limit.
 */
import { DEFAULT_ENGINE_HOST, DEFAULT_MULTI_NODE_MODE, type EngineCommand, type EngineGroup, type EngineSpec, type ParallelLayout } from './engine-spec';
import { buildEngineCommand } from './engine-command';
import { presetFor } from './presets';
import { gangAccelerators, groupLayout, hostPort } from './engines/group';

/** The sizes the real engine runs with (engine-sim reports them): SGLang's one tensor group, vLLM data parallel's ranks. */
function simulatedLayout(spec: EngineSpec, group: EngineGroup): ParallelLayout {
  if (group.layout) return group.layout;
  if (spec.engine === 'sglang') return { tensorParallel: gangAccelerators(spec, group), pipelineParallel: 1 };
  if (spec.engine === 'vllm' && (group.mode ?? DEFAULT_MULTI_NODE_MODE) === 'data-parallel') return { tensorParallel: 1, pipelineParallel: 1 };
  return groupLayout(spec, group);
}

/**
 * A simulated group member carries the real engine's command line for this rank here (a JSON
 * array: program, then arguments), so what a real fleet would run can be checked on a simulated one.
 */
export const ENGINE_COMMAND_ENV = 'GPUFLEET_ENGINE_COMMAND';

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
  ];
  const group = spec.group;
  if (group) {
    // engine-sim forms a group with SGLang's flags (the same on every rank but --node-rank),
    // whatever the engine: the leader waits at --dist-init-addr for every rank.
    const layout = simulatedLayout(spec, group);
    args.push(
      '--tensor-parallel-size',
      String(layout.tensorParallel),
      '--pipeline-parallel-size',
      String(layout.pipelineParallel),
      '--nnodes',
      String(group.size),
      '--node-rank',
      String(group.rank),
      '--dist-init-addr',
      hostPort(group.leaderAddress, group.rendezvousPort),
    );
  } else {
    args.push('--tensor-parallel-size', String(spec.acceleratorsPerPod));
  }
  // A custom engine has no preset; engine-sim keeps its own default concurrency.
  if (spec.engine !== 'custom') args.push('--max-num-seqs', String(presetFor(spec.engine, spec.mode, spec.acceleratorMemoryMib).maxConcurrency));
  const env = group ? { ...real.env, [ENGINE_COMMAND_ENV]: JSON.stringify([real.command, ...real.args]) } : real.env;
  return { command: engineSimEntry.command, args, env };
}
