import { stableStringify } from './content-fingerprint';

describe('stableStringify', () => {
  it('serialises equal objects the same way whatever their key order', () => {
    expect(stableStringify({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: 3 } })).toBe(stableStringify({ a: { c: 3, d: [2, { x: 0, y: 1 }] }, b: 1 }));
  });
});
