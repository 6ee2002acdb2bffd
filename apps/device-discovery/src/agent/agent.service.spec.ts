import { loadConfig } from '@gpufleet/config';
import { createLogger } from '@gpufleet/observability';
import { agentConfigSchema } from '../config';
import { AgentService } from './agent.service';

// Only the readiness sentence here: the loop itself is NodeAgent's (node-agent.spec.ts) and the
// whole service runs against NATS in agent.fleet.int.spec.ts.
function service(names: string[]): AgentService {
  const none = undefined as never;
  return new AgentService(none, none, loadConfig(agentConfigSchema, {}), { names }, createLogger({ service: 'test', level: 'silent' }));
}

describe('agent readiness', () => {
  it('waits for the first detection pass of its one node, in the words it always used', () => {
    expect(() => service(['h100-0']).checkReady()).toThrow(/^first detection pass not finished$/);
  });

  it('says how many of many nodes are still pending', () => {
    expect(() => service(['a', 'b', 'c']).checkReady()).toThrow('first detection pass not finished on 3 of 3 nodes');
  });
});
