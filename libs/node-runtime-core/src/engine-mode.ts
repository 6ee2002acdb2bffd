import type { NodeInventory } from '@gpufleet/contracts';

/** `simulated`: engine-sim stands in for every engine (a simulated fleet); `real`: the engine binaries. */
export type EngineMode = 'simulated' | 'real';
export type EngineModeSetting = 'auto' | EngineMode;

/**
 * `auto` follows the node: a node whose devices come from the `simulated` provider (a fleet
 * file) has no GPUs to run a real engine on, so its engines are simulated.
 */
export function resolveEngineMode(setting: EngineModeSetting, inventory: NodeInventory): EngineMode {
  if (setting !== 'auto') return setting;
  return inventory.providers.some((p) => p.provider === 'simulated') ? 'simulated' : 'real';
}
