export interface WaitOptions<T> {
  /** What is waited for, for the timeout message: "deployment default/llama to be Ready". */
  what: string;
  read: () => Promise<T>;
  /** true: done; a string: it cannot get there (the reason); false: keep waiting. */
  done: (item: T) => boolean | string;
  /** One line describing where it stands; printed whenever it changes. */
  progress: (item: T) => string;
  timeoutS: number;
  out: (text: string) => void;
  intervalMs?: number;
}

function elapsed(since: number): string {
  return `${Math.round((Date.now() - since) / 1000)}s`.padStart(5);
}

/** Polls until `done`, printing each change of progress; the timeout error names --timeout. */
export async function waitWithProgress<T>(o: WaitOptions<T>): Promise<T> {
  const start = Date.now();
  let last = '';
  for (;;) {
    const item = await o.read();
    const line = o.progress(item);
    if (line !== last) {
      o.out(`  ${elapsed(start)}  ${line}`);
      last = line;
    }
    const verdict = o.done(item);
    if (verdict === true) return item;
    if (typeof verdict === 'string') throw new Error(verdict);
    if (Date.now() - start >= o.timeoutS * 1000) {
      throw new Error(`DEADLINE_EXCEEDED: waited --timeout ${o.timeoutS}s for ${o.what}; it is still ${line} (it keeps going: the wait only ended)`);
    }
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 1000));
  }
}
