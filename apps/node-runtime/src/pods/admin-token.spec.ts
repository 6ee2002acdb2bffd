import { adminTokenProblem } from './admin-token';

describe('adminTokenProblem', () => {
  it('lets everything through without a configured token (the local stack)', () => {
    expect(adminTokenProblem(undefined, undefined)).toBeUndefined();
  });

  it('needs the bearer token when one is configured', () => {
    expect(adminTokenProblem('Bearer s3cret', 's3cret')).toBeUndefined();
    expect(adminTokenProblem(undefined, 's3cret')).toBe('this API needs "Authorization: Bearer <admin token>" (GPUFLEET_ADMIN_TOKEN)');
    expect(adminTokenProblem('Basic czNjcmV0', 's3cret')).toMatch(/needs "Authorization: Bearer/);
    expect(adminTokenProblem('Bearer guess', 's3cret')).toBe('the admin token presented is not valid');
  });
});
