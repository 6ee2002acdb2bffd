import { execFileSync } from 'node:child_process';
import { NODE_FLAGS, nodeFlagsOf } from './node-flags';

/** What a node started with `flags` reports about its heap (MiB). */
function heapLimits(flags: readonly string[]): { oldSpaceMib: number; semiSpaceMib: number } {
  const script =
    "const v8 = require('v8'); const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space');" +
    'console.log(JSON.stringify({ limit: v8.getHeapStatistics().heap_size_limit, newSpace: s.space_size }))';
  const out = JSON.parse(execFileSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' })) as { limit: number; newSpace: number };
  return { oldSpaceMib: out.limit / 2 ** 20, semiSpaceMib: out.newSpace / 2 ** 20 };
}

describe('NODE_FLAGS', () => {
  it.each(Object.keys(NODE_FLAGS))('are flags this node accepts (%s)', (app) => {
    expect(() => heapLimits(nodeFlagsOf(app))).not.toThrow();
  });

  it.each(['device-discovery', 'node-runtime'])('bound the heap of %s and keep its young generation small', (app) => {
    const { oldSpaceMib, semiSpaceMib } = heapLimits(nodeFlagsOf(app));
    expect(oldSpaceMib).toBeLessThanOrEqual(160); // 128 MiB old space plus the young generation
    expect(semiSpaceMib).toBeLessThanOrEqual(1);
  });

  it('gives a service that is not listed no flags', () => {
    expect(nodeFlagsOf('inference-router')).toEqual([]);
  });
});
