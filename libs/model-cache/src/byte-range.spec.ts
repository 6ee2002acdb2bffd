import { parseRange } from './byte-range';

describe('parseRange', () => {
  it.each([
    [undefined, undefined],
    ['bytes=0-9', { start: 0, end: 9 }],
    ['bytes=90-', { start: 90, end: 99 }],
    ['bytes=-10', { start: 90, end: 99 }],
    ['bytes=50-500', { start: 50, end: 99 }],
    ['bytes=100-', 'unsatisfiable'],
    ['bytes=9-1', 'invalid'],
    ['bytes=0-1,5-6', 'invalid'],
    ['items=0-1', 'invalid'],
  ])('%s of a 100-byte file', (header, expected) => {
    expect(parseRange(header, 100)).toEqual(expected);
  });
});
