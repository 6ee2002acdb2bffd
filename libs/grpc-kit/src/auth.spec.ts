import { Metadata } from '@grpc/grpc-js';
import { requireAdmin } from './auth';

const md = (value?: string) => {
  const m = new Metadata();
  if (value) m.set('authorization', value);
  return m;
};

describe('requireAdmin', () => {
  it('lets everything through when no admin token is configured (local stack)', () => {
    expect(() => requireAdmin(md(), undefined)).not.toThrow();
  });
  it('accepts the configured bearer token', () => {
    expect(() => requireAdmin(md('Bearer s3cret'), 's3cret')).not.toThrow();
  });
  it('rejects a missing or wrong token with UNAUTHENTICATED and says what is expected', () => {
    expect(() => requireAdmin(md(), 's3cret')).toThrow(/UNAUTHENTICATED: this management API needs "authorization: Bearer <admin token>"/);
    expect(() => requireAdmin(md('Bearer nope'), 's3cret')).toThrow(/UNAUTHENTICATED: the admin token presented is not valid/);
    expect(() => requireAdmin(md('s3cret'), 's3cret')).toThrow(/UNAUTHENTICATED/);
  });
});
