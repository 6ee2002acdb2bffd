import type { DeliveryFailureReason } from './errors';

export type DeliveryState = 'Downloading' | 'Ready' | 'Failed';

export interface DeliveryProgress {
  /** manifest digest */
  readonly digest: string;
  readonly state: DeliveryState;
  /** bytes of the manifest's files that are on disk, including blobs already cached */
  readonly bytesDone: number;
  readonly bytesTotal: number;
  /** 0–100, one decimal */
  readonly percent: number;
  readonly reason?: DeliveryFailureReason;
  readonly message?: string;
}

export interface ProgressThrottle {
  /** ms between two Downloading reports at most once per this (default 5000) */
  readonly intervalMs: number;
  /** or when percent advanced this much (default 5) */
  readonly stepPercent: number;
}

export const DEFAULT_PROGRESS_THROTTLE: ProgressThrottle = { intervalMs: 5_000, stepPercent: 5 };

function percentOf(done: number, total: number): number {
  return total === 0 ? 100 : Math.floor((done * 1000) / total) / 10;
}

/**
 * Reports Downloading at most every `intervalMs` or `stepPercent`, and always exactly one final
 * Ready or Failed, after which nothing more is reported: a status never stays "Downloading".
 */
export class ProgressReporter {
  private done = 0;
  private lastAt = -Infinity;
  private lastPercent = -Infinity;
  private finished = false;

  constructor(
    private readonly digest: string,
    private readonly total: number,
    private readonly listener: ((p: DeliveryProgress) => void) | undefined,
    private readonly throttle: ProgressThrottle = DEFAULT_PROGRESS_THROTTLE,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get bytesDone(): number {
    return this.done;
  }

  /** bytes newly on disk (negative when a corrupt partial file is thrown away) */
  add(bytes: number): void {
    this.done = Math.max(0, Math.min(this.total, this.done + bytes));
    if (this.finished) return;
    const t = this.now();
    const percent = percentOf(this.done, this.total);
    if (t - this.lastAt >= this.throttle.intervalMs || Math.abs(percent - this.lastPercent) >= this.throttle.stepPercent) {
      this.emit({ state: 'Downloading' });
    }
  }

  start(): void {
    this.emit({ state: 'Downloading' });
  }

  ready(): void {
    this.done = this.total;
    this.final({ state: 'Ready' });
  }

  failed(reason: DeliveryFailureReason, message: string): void {
    this.final({ state: 'Failed', reason, message });
  }

  private final(p: Pick<DeliveryProgress, 'state' | 'reason' | 'message'>): void {
    if (this.finished) return;
    this.emit(p);
    this.finished = true;
  }

  private emit(p: Pick<DeliveryProgress, 'state' | 'reason' | 'message'>): void {
    if (this.finished) return;
    this.lastAt = this.now();
    this.lastPercent = percentOf(this.done, this.total);
    this.listener?.({ digest: this.digest, bytesDone: this.done, bytesTotal: this.total, percent: this.lastPercent, ...p });
  }
}
