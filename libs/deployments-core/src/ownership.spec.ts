import { OwnerLabels } from '@gpufleet/contracts';
import { ownerOf } from './ownership';

describe('ownerOf', () => {
  it('a replica workload is owned by its deployment', () => {
    expect(ownerOf({ labels: { [OwnerLabels.deployment]: 'qwen', [OwnerLabels.role]: 'server' } })).toEqual({ kind: 'deployment', name: 'qwen' });
  });

  it("an instance's workload is owned by its instance", () => {
    expect(ownerOf({ labels: { [OwnerLabels.instance]: 'dev' } })).toEqual({ kind: 'instance', name: 'dev' });
  });

  it('a workload labelled for both belongs to the deployment only, so one controller owns it', () => {
    expect(ownerOf({ labels: { [OwnerLabels.instance]: 'dev', [OwnerLabels.deployment]: 'qwen' } })?.kind).toBe('deployment');
  });

  it('a workload submitted by hand has no owner', () => {
    expect(ownerOf({ labels: { team: 'a' } })).toBeUndefined();
    expect(ownerOf({ labels: {} })).toBeUndefined();
  });
});
