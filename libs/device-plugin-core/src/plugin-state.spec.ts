import { DevicePluginState } from './plugin-state';
import { dgx1 } from './__fixtures__/nodes';

const GPU = 'gpufleet.io/nvidia-gpu';

describe('device plugin state', () => {
  it('lists every device Healthy with its NUMA node at first', () => {
    const s = new DevicePluginState();
    expect([...s.update(dgx1())]).toEqual([GPU]);
    expect(s.devices(GPU)[4]).toEqual({ ID: 'GPU-v100-4', health: 'Healthy', topology: { nodes: [{ ID: 1 }] } });
  });

  it('reports a change only when health flips, for every resource of the card', () => {
    const s = new DevicePluginState({ settings: { modes: ['whole', 'shared'], sharedReplicas: 2, slicesPerCard: 1 }, health: { unhealthyAfter: 2, healthyAfter: 2 } });
    s.update(dgx1());
    expect([...s.observe('GPU-v100-1', { ok: false })]).toEqual([]);
    expect([...s.observe('GPU-v100-1', { ok: false })]).toEqual([GPU, 'gpufleet.io/nvidia-gpu-shared']);
    expect(s.devices('gpufleet.io/nvidia-gpu-shared').filter((d) => d.health === 'Unhealthy').map((d) => d.ID)).toEqual(['GPU-v100-1::0', 'GPU-v100-1::1']);
    s.observe('GPU-v100-1', { ok: true });
    expect([...s.observe('GPU-v100-1', { ok: true })]).toEqual([GPU, 'gpufleet.io/nvidia-gpu-shared']);
    expect(s.devices(GPU).every((d) => d.health === 'Healthy')).toBe(true);
  });

  it('keeps a card missing from detection passes, Unhealthy after the hysteresis, and Healthy again when it is back', () => {
    const s = new DevicePluginState({ health: { unhealthyAfter: 2, healthyAfter: 1 } });
    const full = dgx1();
    const without7 = { ...full, accelerators: full.accelerators.filter((a) => a.index !== 7) };
    s.update(full);
    expect([...s.update(without7)]).toEqual([]);
    expect([...s.update(without7)]).toEqual([GPU]);
    expect(s.devices(GPU).map((d) => d.ID)).toContain('GPU-v100-7');
    expect(s.devices(GPU).find((d) => d.ID === 'GPU-v100-7')?.health).toBe('Unhealthy');
    expect([...s.update(full)]).toEqual([GPU]);
    expect(s.devices(GPU).find((d) => d.ID === 'GPU-v100-7')?.health).toBe('Healthy');
  });

  it('counts a failed vendor provider pass as a failed probe of its cards', () => {
    const s = new DevicePluginState({ health: { unhealthyAfter: 2, healthyAfter: 1 } });
    const full = dgx1();
    const failing = { ...full, providers: [{ provider: 'nvidia', ok: false, error: 'nvidia-smi timed out', lastSuccess: undefined, lastAttempt: undefined }] };
    s.update(full);
    expect([...s.update(failing)]).toEqual([]);
    expect([...s.update(failing)]).toEqual([GPU]);
    expect(s.devices(GPU).every((d) => d.health === 'Unhealthy')).toBe(true);
    expect([...s.update(full)]).toEqual([GPU]);
  });

  it('ignores observations of cards it does not know', () => {
    const s = new DevicePluginState();
    s.update(dgx1());
    expect([...s.observe('GPU-elsewhere', { ok: false, xid: 79 })]).toEqual([]);
  });
});
