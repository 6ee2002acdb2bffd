/**
 * One dependency the service needs before it can take work, e.g. NATS connected, the KV bucket
 * open, the scheduler's lease held. `check` throws (or rejects) with the reason when not ready:
 * `throw new Error('disconnected')` reads as `nats: disconnected` on /readyz.
 */
export interface ReadinessCheck {
  readonly name: string;
  readonly check: () => Promise<void> | void;
}

export interface ReadinessResult {
  readonly name: string;
  readonly ok: boolean;
  /** Why the check failed; absent when ok. */
  readonly reason?: string;
  readonly durationMs: number;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: readonly ReadinessResult[];
}

/** The /readyz response body. */
export interface ReadinessBody {
  readonly status: 'ready' | 'not ready';
  /** `ok` or the failure reason, by check name. */
  readonly checks: Readonly<Record<string, string>>;
  /** `name: reason` for every failed check, e.g. `nats: disconnected`. */
  readonly failed?: readonly string[];
}

/** ms a check may take before it counts as failed: a probe must answer before kubelet gives up. */
export const DEFAULT_READINESS_TIMEOUT_MS = 2000;

function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' && error ? error : String(error);
}

async function runCheck(check: ReadinessCheck, timeoutMs: number): Promise<ReadinessResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([Promise.resolve().then(check.check), timeout]);
    return { name: check.name, ok: true, durationMs: performance.now() - started };
  } catch (error) {
    return { name: check.name, ok: false, reason: reasonOf(error), durationMs: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check concurrently, each bounded by `timeoutMs`. Ready when all pass (and when there are none). */
export async function evaluateReadiness(
  checks: readonly ReadinessCheck[],
  timeoutMs: number = DEFAULT_READINESS_TIMEOUT_MS,
): Promise<ReadinessReport> {
  const results = await Promise.all(checks.map((check) => runCheck(check, timeoutMs)));
  return { ready: results.every((r) => r.ok), checks: results };
}

export function readinessBody(report: ReadinessReport): ReadinessBody {
  const checks: Record<string, string> = {};
  for (const result of report.checks) checks[result.name] = result.ok ? 'ok' : (result.reason ?? 'failed');
  if (report.ready) return { status: 'ready', checks };
  const failed = report.checks.filter((r) => !r.ok).map((r) => `${r.name}: ${r.reason ?? 'failed'}`);
  return { status: 'not ready', checks, failed };
}
