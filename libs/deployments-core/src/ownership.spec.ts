import { OwnerLabels } from '@gpufleet/contracts';
import { WorkloadSpec } from '@gpufleet/contracts';
import { ownedBy, ownerOf, withOwnerUid } from './ownership';

describe('ownerOf', () => {
  it('a replica workload is owned by its deployment', () => {
    expect(ownerOf({ labels: { [OwnerLabels.deployment]: 'qwen', [OwnerLabels.role]: 'server' } })).toEqual({ kind: 'deployment', name: 'qwen', uid: '' });
  });

  it("an instance's workload is owned by its instance", () => {
    expect(ownerOf({ labels: { [OwnerLabels.instance]: 'dev' } })).toEqual({ kind: 'instance', name: 'dev', uid: '' });
  });

  it('a workload labelled for both belongs to the deployment only, so one controller owns it', () => {
    expect(ownerOf({ labels: { [OwnerLabels.instance]: 'dev', [OwnerLabels.deployment]: 'qwen' } })?.kind).toBe('deployment');
  });

  it('a workload submitted by hand has no owner', () => {
    expect(ownerOf({ labels: { team: 'a' } })).toBeUndefined();
    expect(ownerOf({ labels: {} })).toBeUndefined();
  });

  it("names the owning record's uid, and a workload belongs only to the record with that uid", () => {
    const spec = withOwnerUid(WorkloadSpec.fromPartial({ name: 'qwen-server-0-abcde', labels: { [OwnerLabels.deployment]: 'qwen' } }), 'uid-1');
    expect(ownerOf(spec)).toEqual({ kind: 'deployment', name: 'qwen', uid: 'uid-1' });
    expect(ownedBy(spec, 'uid-1')).toBe(true);
    // The same name created again gets a new uid: the old workloads are not its own.
    expect(ownedBy(spec, 'uid-2')).toBe(false);
    // Records and workloads from before uids still match each other, and nothing else.
    const legacy = WorkloadSpec.fromPartial({ labels: { [OwnerLabels.deployment]: 'qwen' } });
    expect(withOwnerUid(legacy, '')).toBe(legacy);
    expect(ownedBy(legacy, '')).toBe(true);
    expect(ownedBy(legacy, 'uid-1')).toBe(false);
  });
});
