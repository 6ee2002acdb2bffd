export * from './engine-spec';
export { buildEngineCommand } from './engine-command';
export { simulatedEngineCommand, type EngineSimEntry } from './simulated';
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
