import { detectSandbox, type SandboxSupport } from '@gpufleet/process-runtime';
import type { SANDBOX_MODES } from '../config';

/** Whether this runtime sandboxes its pods, and the one line it says about it at start. */
export interface SandboxDecision {
  readonly sandboxed: boolean;
  readonly level: 'info' | 'warn';
  readonly message: string;
}

/**
 * SANDBOX against what the host can do: `off` never sandboxes, `auto` sandboxes when it can and
 * warns when it cannot, `required` refuses to run pods unconfined (throws, so the runtime
 * does not start).
 */
export function decideSandbox(mode: (typeof SANDBOX_MODES)[number], detect: () => SandboxSupport = detectSandbox): SandboxDecision {
  if (mode === 'off') return { sandboxed: false, level: 'warn', message: 'pod sandboxes are off (SANDBOX=off): pods run as the runtime’s user and see what it sees' };
  const support = detect();
  if (support.supported) return { sandboxed: true, level: 'info', message: `pods run sandboxed: ${support.detail}` };
  if (mode === 'required') {
    throw new Error(`FAILED_PRECONDITION: SANDBOX=required but this host cannot sandbox pods: ${support.reason}; fix that, or set SANDBOX=auto to run them unconfined`);
  }
  return {
    sandboxed: false,
    level: 'warn',
    message: `pods run UNCONFINED (as the runtime’s user, with its view of files, processes and devices): ${support.reason}; set SANDBOX=required to refuse this`,
  };
}
