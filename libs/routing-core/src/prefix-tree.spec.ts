import fc from 'fast-check';
import { PrefixTree } from './prefix-tree';

function clean(tree: PrefixTree): void {
  expect(tree.audit().problems).toEqual([]);
}

describe('PrefixTree', () => {
  it('matches nothing when empty, and an empty text matches nothing', () => {
    const tree = new PrefixTree();
    expect(tree.match('hello')).toEqual({ replicaId: undefined, matchedChars: 0, ratio: 0 });
    tree.insert('hello', 'r1');
    expect(tree.match('')).toEqual({ replicaId: undefined, matchedChars: 0, ratio: 0 });
  });

  it('answers the replica that served the text, with the shared part and its ratio', () => {
    const tree = new PrefixTree();
    tree.insert('You are a helpful assistant. Hi', 'r1');
    expect(tree.match('You are a helpful assistant. Hi')).toEqual({ replicaId: 'r1', matchedChars: 31, ratio: 1 });
    expect(tree.match('You are a helpful assistant. What is 2+2?')).toEqual({ replicaId: 'r1', matchedChars: 29, ratio: 29 / 41 });
    expect(tree.match('Xou')).toEqual({ replicaId: undefined, matchedChars: 0, ratio: 0 });
    clean(tree);
  });

  it('prefers the longest shared prefix over a more recent shorter one', () => {
    const tree = new PrefixTree();
    tree.insert('system: be brief. user: tell me about GPUs', 'long');
    tree.insert('system: be verbose', 'short');
    expect(tree.match('system: be brief. user: tell me about TPUs').replicaId).toBe('long');
    clean(tree);
  });

  it('breaks ties by most recent use', () => {
    const tree = new PrefixTree();
    tree.insert('shared prefix A', 'r1');
    tree.insert('shared prefix B', 'r2');
    expect(tree.match('shared prefix C')).toMatchObject({ replicaId: 'r2', matchedChars: 14 });
    tree.insert('shared prefix D', 'r1');
    expect(tree.match('shared prefix C').replicaId).toBe('r1');
  });

  it('ignores replicas the filter rejects, falling back to the next longest match', () => {
    const tree = new PrefixTree();
    tree.insert('abcdef', 'r1');
    tree.insert('abcxyz', 'r2');
    expect(tree.match('abcdef', (id) => id !== 'r1')).toEqual({ replicaId: 'r2', matchedChars: 3, ratio: 0.5 });
    expect(tree.match('abcdef', () => false)).toEqual({ replicaId: undefined, matchedChars: 0, ratio: 0 });
  });

  it('counts each replica’s characters once per node it claims', () => {
    const tree = new PrefixTree();
    tree.insert('abc', 'r1');
    tree.insert('abd', 'r1');
    tree.insert('abc', 'r2');
    expect(tree.charsOf('r1')).toBe(4); // ab + c + d
    expect(tree.charsOf('r2')).toBe(3);
    expect(tree.charsOf('nobody')).toBe(0);
    expect(tree.nodeCount).toBe(3);
    clean(tree);
  });

  it('evicts the least recently used leaf of a replica over its budget', () => {
    const tree = new PrefixTree({ maxCharsPerReplica: 10 });
    tree.insert('aaaaa', 'r1');
    tree.insert('bbbbb', 'r1');
    tree.insert('aaaaa', 'r1'); // touch: bbbbb is now the oldest
    tree.insert('ccccc', 'r1');
    expect(tree.match('bbbbb').replicaId).toBeUndefined();
    expect(tree.match('aaaaa').replicaId).toBe('r1');
    expect(tree.match('ccccc').replicaId).toBe('r1');
    expect(tree.charsOf('r1')).toBe(10);
    clean(tree);
  });

  it('evicts a leaf and keeps the prefix it shares with newer text', () => {
    const tree = new PrefixTree({ maxCharsPerReplica: 8 });
    tree.insert('abcdef', 'r1');
    tree.insert('abcxyz', 'r1'); // abc + def + xyz = 9: def goes
    expect(tree.charsOf('r1')).toBe(6);
    expect(tree.match('abcdef')).toMatchObject({ replicaId: 'r1', matchedChars: 3 });
    expect(tree.match('abcxyz')).toMatchObject({ replicaId: 'r1', matchedChars: 6 });
    clean(tree);
  });

  it('evicts one replica’s claims without touching another’s on the same nodes', () => {
    const tree = new PrefixTree({ maxCharsPerReplica: 6 });
    tree.insert('abcdef', 'r1');
    tree.insert('abcdef', 'r2');
    tree.insert('zzzz', 'r1'); // r1 over budget: its claim on abcdef goes, r2's stays
    expect(tree.match('abcdef', (id) => id === 'r1').replicaId).toBeUndefined();
    expect(tree.match('abcdef').replicaId).toBe('r2');
    clean(tree);
  });

  it('keeps only the budget’s worth of a text longer than the budget', () => {
    const tree = new PrefixTree({ maxCharsPerReplica: 4 });
    tree.insert('abcdefgh', 'r1');
    expect(tree.charsOf('r1')).toBe(4);
    expect(tree.match('abcdefgh')).toEqual({ replicaId: 'r1', matchedChars: 4, ratio: 0.5 });
    clean(tree);
  });

  it('forgets a removed replica and drops the nodes only it claimed', () => {
    const tree = new PrefixTree();
    tree.insert('abcdef', 'r1');
    tree.insert('abcxyz', 'r2');
    tree.removeReplica('r2');
    tree.removeReplica('never-seen');
    expect(tree.match('abcxyz')).toMatchObject({ replicaId: 'r1', matchedChars: 3 });
    expect(tree.replicaIds()).toEqual(['r1']);
    expect(tree.charsOf('r2')).toBe(0);
    clean(tree);
    tree.removeReplica('r1');
    expect(tree.nodeCount).toBe(0);
  });

  it('rejects a budget that is not a positive integer', () => {
    expect(() => new PrefixTree({ maxCharsPerReplica: 0 })).toThrow('maxCharsPerReplica: expected an integer ≥ 1, got 0');
  });

  // Reference model without eviction: the longest common prefix with any text a replica served;
  // ties go to the replica that most recently inserted a text sharing that much.
  it('answers what a brute-force search over the inserted texts answers', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c'), maxLength: 12 });
    const op = fc.oneof(
      fc.record({ kind: fc.constant('insert' as const), text, replica: fc.constantFrom('r1', 'r2', 'r3') }),
      fc.record({ kind: fc.constant('remove' as const), replica: fc.constantFrom('r1', 'r2', 'r3') }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.array(text, { minLength: 1, maxLength: 5 }), (ops, queries) => {
        const tree = new PrefixTree();
        const served: { text: string; replica: string; time: number }[] = [];
        ops.forEach((o, time) => {
          if (o.kind === 'insert') {
            tree.insert(o.text, o.replica);
            if (o.text.length > 0) served.push({ text: o.text, replica: o.replica, time });
          } else {
            tree.removeReplica(o.replica);
            for (let i = served.length - 1; i >= 0; i--) if (served[i].replica === o.replica) served.splice(i, 1);
          }
        });
        expect(tree.audit().problems).toEqual([]);
        for (const query of queries) {
          const longest = Math.max(0, ...served.map((s) => lcp(s.text, query)));
          const got = tree.match(query);
          expect(got.matchedChars).toBe(longest);
          if (longest === 0) {
            expect(got.replicaId).toBeUndefined();
            continue;
          }
          const newest = served.filter((s) => lcp(s.text, query) >= longest).sort((a, b) => b.time - a.time)[0];
          expect(got.replicaId).toBe(newest.replica);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps its invariants and every replica under budget through random inserts and removals', () => {
    const op = fc.record({
      text: fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 30 }),
      replica: fc.constantFrom('r1', 'r2', 'r3', 'r4'),
      remove: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(op, { maxLength: 80 }), (budget, ops) => {
        const tree = new PrefixTree({ maxCharsPerReplica: budget });
        for (const o of ops) {
          if (o.remove) tree.removeReplica(o.replica);
          else tree.insert(o.text, o.replica);
          const { problems, chars } = tree.audit();
          expect(problems).toEqual([]);
          for (const size of chars.values()) expect(size).toBeLessThanOrEqual(budget);
          // The text just inserted is the most recent: as much of it as fits is still there.
          if (!o.remove && o.text.length > 0) {
            expect(tree.match(o.text, (id) => id === o.replica).matchedChars).toBe(Math.min(o.text.length, budget));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

function lcp(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
