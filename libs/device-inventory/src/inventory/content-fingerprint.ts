import type { Accelerator, NodeInventory } from '@gpufleet/contracts';

/** JSON with object keys sorted, so equal content always serialises the same way. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
}

function stableAccelerator(a: Accelerator): Omit<Accelerator, 'memoryUsedMib' | 'utilizationPercent' | 'temperatureCelsius'> {
  const { memoryUsedMib: _used, utilizationPercent: _util, temperatureCelsius: _temp, ...rest } = a;
  return rest;
}

/**
 * What "the inventory changed" means: everything a consumer would act on, without the
 * timestamps and the readings that move on every pass (utilization, temperature, memory in
 * use, free system memory). A provider turning failed or healthy is a change.
 */
export function contentFingerprint(inventory: NodeInventory): string {
  const { observedAt: _observed, generation: _generation, providers, accelerators, memory, ...rest } = inventory;
  return stableStringify({
    ...rest,
    accelerators: accelerators.map(stableAccelerator),
    memory: memory ? { totalMib: memory.totalMib } : undefined,
    providers: providers.map((p) => ({ provider: p.provider, ok: p.ok, error: p.error })),
  });
}
