import { nodesHoldingWeights } from './weight-locality';

const spec = (artifact: string, namespace = 'team-a') => ({ namespace, template: { engine: { artifact } as never, instance: undefined } });

describe('nodesHoldingWeights', () => {
  const copies: Array<[string, { node: string; state: string }]> = [
    ['n2.team-a.llama', { node: 'n2', state: 'Ready' }],
    ['n1.team-a.llama', { node: 'n1', state: 'Ready' }],
    ['n3.team-a.llama', { node: 'n3', state: 'Downloading' }],
    ['n4.team-b.llama', { node: 'n4', state: 'Ready' }],
    ['n5.team-a.llama-2', { node: 'n5', state: 'Ready' }],
  ];

  it('names the nodes whose copy of the workload’s artifact, in its namespace, is Ready', () => {
    expect(nodesHoldingWeights(spec('llama'), copies)).toEqual(['n1', 'n2']);
    expect(nodesHoldingWeights(spec('llama', 'team-b'), copies)).toEqual(['n4']);
  });

  it('prefers nothing for a workload without an artifact', () => {
    expect(nodesHoldingWeights(spec(''), copies)).toEqual([]);
    expect(nodesHoldingWeights({ namespace: 'team-a', template: undefined }, copies)).toEqual([]);
  });
});
