import { MIG_CATALOGUE } from '../catalog';
import { placeMigPartitions, type MigRequest } from './mig-placement';

const req = (profile: string, start?: number): MigRequest => ({ profile, start, path: 'p' });

describe('MIG placement', () => {
  it('finds a fitting arrangement regardless of the order partitions are written in', () => {
    const geometry = MIG_CATALOGUE['A100-40GB'];
    const result = placeMigPartitions([req('1g.5gb'), req('1g.5gb'), req('2g.10gb'), req('3g.20gb')], geometry, 40960, 'GPU 0');
    expect('partitions' in result && result.partitions.map((p) => `${p.profile}@${p.start}`)).toEqual([
      '2g.10gb@0',
      '1g.5gb@2',
      '1g.5gb@3',
      '3g.20gb@4',
    ]);
  });

  it('fills all seven compute slices with 1g partitions but no eighth', () => {
    const geometry = MIG_CATALOGUE['A100-80GB'];
    const seven = Array.from({ length: 7 }, () => req('1g.10gb'));
    expect('partitions' in placeMigPartitions(seven, geometry, 81920, 'GPU 0')).toBe(true);
    const eight = placeMigPartitions([...seven, req('1g.10gb')], geometry, 81920, 'GPU 0');
    expect('problem' in eight && eight.problem.message).toMatch(/need 8 compute slices, a 80 GB GPU has 7/);
  });
});
