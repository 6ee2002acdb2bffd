import { DeviceHealth } from './health';

describe('device health with hysteresis', () => {
  const bad = { ok: false as const, reason: 'probe failed' };
  const good = { ok: true as const };

  it('stays Healthy through one transient bad reading and turns Unhealthy after K in a row', () => {
    const h = new DeviceHealth({ unhealthyAfter: 3, healthyAfter: 2 });
    expect(h.observe('GPU-0', bad)).toBe(false);
    expect(h.observe('GPU-0', good)).toBe(false);
    expect(h.observe('GPU-0', bad)).toBe(false);
    expect(h.observe('GPU-0', bad)).toBe(false);
    expect(h.isHealthy('GPU-0')).toBe(true);
    expect(h.observe('GPU-0', bad)).toBe(true);
    expect(h.isHealthy('GPU-0')).toBe(false);
    expect(h.reasonOf('GPU-0')).toBe('probe failed');
  });

  it('recovers after M good readings in a row, without a restart', () => {
    const h = new DeviceHealth({ unhealthyAfter: 1, healthyAfter: 3 });
    h.observe('GPU-0', bad);
    expect(h.observe('GPU-0', good)).toBe(false);
    expect(h.observe('GPU-0', good)).toBe(false);
    expect(h.observe('GPU-0', bad)).toBe(false);
    expect(h.observe('GPU-0', good)).toBe(false);
    expect(h.observe('GPU-0', good)).toBe(false);
    expect(h.observe('GPU-0', good)).toBe(true);
    expect(h.isHealthy('GPU-0')).toBe(true);
    expect(h.reasonOf('GPU-0')).toBeUndefined();
  });

  it('turns Unhealthy at once on a fatal XID, and still recovers', () => {
    const h = new DeviceHealth({ unhealthyAfter: 5, healthyAfter: 2 });
    expect(h.observe('GPU-1', { ok: false, xid: 79 })).toBe(true);
    expect(h.reasonOf('GPU-1')).toBe('XID 79');
    h.observe('GPU-1', good);
    expect(h.observe('GPU-1', good)).toBe(true);
  });

  it('ignores XIDs the application causes, and transient XIDs count as bad readings', () => {
    const h = new DeviceHealth({ unhealthyAfter: 2, healthyAfter: 1 });
    for (let i = 0; i < 5; i++) expect(h.observe('GPU-2', { ok: false, xid: 13 })).toBe(false);
    expect(h.isHealthy('GPU-2')).toBe(true);
    h.observe('GPU-2', { ok: false, xid: 32 });
    expect(h.observe('GPU-2', { ok: false, xid: 32 })).toBe(true);
  });

  it('keeps each card apart and refuses thresholds below one', () => {
    const h = new DeviceHealth({ unhealthyAfter: 1, healthyAfter: 1 });
    h.observe('GPU-0', bad);
    expect(h.isHealthy('GPU-1')).toBe(true);
    expect(() => new DeviceHealth({ unhealthyAfter: 0, healthyAfter: 1 })).toThrow('unhealthyAfter must be a positive integer');
  });
});
