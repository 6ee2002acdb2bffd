import { decideSandbox } from './sandbox-mode';

const can = () => ({ supported: true as const, tools: { bwrap: '/usr/bin/bwrap', setpriv: '/usr/bin/setpriv' }, detail: 'bwrap 0.8.0' });
const cannot = () => ({ supported: false as const, reason: 'the runtime runs as uid 1000, not root' });

describe('decideSandbox', () => {
  it('auto: sandboxes when the host can, warns with the reason when it cannot', () => {
    expect(decideSandbox('auto', can)).toMatchObject({ sandboxed: true, level: 'info', message: 'pods run sandboxed: bwrap 0.8.0' });
    expect(decideSandbox('auto', cannot)).toMatchObject({ sandboxed: false, level: 'warn', message: expect.stringContaining('UNCONFINED') });
    expect(decideSandbox('auto', cannot).message).toContain('uid 1000');
  });

  it('required: refuses to start without a sandbox, saying what to do', () => {
    expect(decideSandbox('required', can).sandboxed).toBe(true);
    expect(() => decideSandbox('required', cannot)).toThrow(/^FAILED_PRECONDITION: SANDBOX=required .*uid 1000.*SANDBOX=auto/);
  });

  it('off: never sandboxes, never probes', () => {
    expect(decideSandbox('off', () => { throw new Error('not probed'); })).toMatchObject({ sandboxed: false, level: 'warn' });
  });
});
