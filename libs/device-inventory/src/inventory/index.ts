export { contentFingerprint, stableStringify } from './content-fingerprint';
export {
  InventoryAssembler,
  type AssembledInventory,
  type InventoryAssemblerOptions,
  type ProviderOutcome,
} from './inventory-assembler';
export { validateInventory } from './validate-inventory';
