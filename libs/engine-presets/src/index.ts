export * from './engine-spec';
export { buildEngineCommand } from './engine-command';
export { ENGINE_COMMAND_ENV, simulatedEngineCommand, type EngineSimEntry } from './simulated';
export { groupLayout } from './engines/group';
export {
  DEFAULT_SPECULATIVE_TOKENS,
  ENGINE_PRESETS,
  MINIMUM_VERSIONS,
  SMALL_ACCELERATOR_MEMORY_FRACTION,
  SMALL_ACCELERATOR_MIB,
  presetFor,
  type EnginePreset,
  type PresetEngine,
} from './presets';
export { validateEngineSpec } from './validation';
