import { loadConfig } from '@gpufleet/config';
import { schedulerConfigSchema } from './config';

describe('scheduler configuration', () => {
  it('defaults to a lease renewed every 5 s that expires after 10 s', () => {
    expect(loadConfig(schedulerConfigSchema, {})).toMatchObject({ LEADER_RENEW_S: 5, LEADER_EXPIRE_S: 10, HOST: '127.0.0.1', GRPC_PORT: 50051 });
  });

  it('refuses a lease that is renewed no more often than it expires, naming both variables', () => {
    expect(() => loadConfig(schedulerConfigSchema, { LEADER_RENEW_S: '10', LEADER_EXPIRE_S: '10' })).toThrow(
      'LEADER_RENEW_S: expected less than LEADER_EXPIRE_S (10), got 10: the lease would lapse between renewals',
    );
    expect(() => loadConfig(schedulerConfigSchema, { LEADER_RENEW_S: '30' })).toThrow(/LEADER_RENEW_S: expected less than LEADER_EXPIRE_S \(10\), got 30/);
    expect(loadConfig(schedulerConfigSchema, { LEADER_RENEW_S: '2', LEADER_EXPIRE_S: '3' }).LEADER_EXPIRE_S).toBe(3);
  });

  it('reports field errors first, without running the cross-checks on bad values', () => {
    expect(() => loadConfig(schedulerConfigSchema, { LEADER_RENEW_S: 'soon' })).toThrow(/^INVALID_CONFIG: 1 environment variable is invalid:\n  LEADER_RENEW_S: expected/);
  });
});
