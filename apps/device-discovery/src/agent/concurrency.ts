/**
 * Calls `fn` on every item with at most `limit` calls in flight, in item order; resolves when
 * all have settled, rejects with the first error after that.
 */
export async function forEachConcurrently<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        await fn(items[index], index);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}
