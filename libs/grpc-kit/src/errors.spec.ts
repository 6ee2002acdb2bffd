import { status } from '@grpc/grpc-js';
import { GrpcError, invalidArgument, MAX_STATUS_MESSAGE, notFound, shownValue } from './errors';

describe('errors that cross the gRPC boundary', () => {
  it('show a long value by its start and length', () => {
    expect(shownValue('a'.repeat(100))).toBe(JSON.stringify('a'.repeat(100)));
    expect(shownValue('a'.repeat(300_000))).toBe(`"${'a'.repeat(64)}"… (300000 characters)`);
    expect(invalidArgument('name', 'a name', 'b'.repeat(5_000)).details).toBe(`INVALID_ARGUMENT: name: expected a name, got "${'b'.repeat(64)}"… (5000 characters)`);
    expect(notFound('node', 'n'.repeat(1_000)).details).toBe(`NOT_FOUND: node "${'n'.repeat(64)}… (1000 characters)" does not exist`);
  });

  it('keep a status message under MAX_STATUS_MESSAGE characters', () => {
    const e = new GrpcError(status.INVALID_ARGUMENT, 'INVALID_ARGUMENT', 'x'.repeat(100_000));
    expect(e.details.length).toBeLessThanOrEqual(MAX_STATUS_MESSAGE);
    expect(e.details).toMatch(/… \(100018 characters in all\)$/);
  });

  it('write the field as printable ASCII metadata, whatever characters it has', () => {
    const e = invalidArgument('labels["\n"]', 'a short value');
    expect(e.metadata.get('gpufleet-field')).toEqual(['labels["\\u{a}"]']);
    expect(invalidArgument('env.é💥', 'x').metadata.get('gpufleet-field')).toEqual(['env.\\u{e9}\\u{1f4a5}']);
    expect(String(invalidArgument('f'.repeat(1_000), 'x').metadata.get('gpufleet-field')[0])).toHaveLength(256);
  });

  it('escape spaces at either end of the field, which HTTP/2 would drop the header for', () => {
    expect(invalidArgument('labels. ', 'x').metadata.get('gpufleet-field')).toEqual(['labels.\\u{20}']);
    expect(invalidArgument('  a b ', 'x').metadata.get('gpufleet-field')).toEqual(['\\u{20}\\u{20}a b\\u{20}']);
  });
});
