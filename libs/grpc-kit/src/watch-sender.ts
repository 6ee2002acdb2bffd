import { status, type ServerWritableStream } from '@grpc/grpc-js';
import { GrpcError } from './errors';

/** Messages a watch may have waiting for a slow client beyond its initial snapshot (WATCH_MAX_BUFFERED). */
export const DEFAULT_WATCH_MAX_BUFFERED = 10_000;

export interface WatchSender<Res> {
  /** Sends one message, or, past the bound, ends the watch with RESOURCE_EXHAUSTED. */
  send(message: Res): void;
  /** Room for the initial snapshot, which goes out at once: `count` more messages may wait. */
  allowSnapshot(count: number): void;
  readonly closed: boolean;
}

/**
 * The writes of a server-streaming watch, bounded: grpc-js buffers whatever a client does not
 * read, so a watcher that stops reading (or reads slower than changes come) would grow the
 * server's memory without end. Past `maxBuffered` waiting messages the watch ends with
 * RESOURCE_EXHAUSTED; the client re-watches with `initial: true` and catches up from a snapshot.
 * `onClose` (unsubscribe from the source) runs once, however the watch ends.
 */
export function watchSender<Req, Res>(call: ServerWritableStream<Req, Res>, options: { maxBuffered: number; what: string; onClose: () => void }): WatchSender<Res> {
  let closed = false;
  let headroom = 0;
  const close = (): void => {
    if (closed) return;
    closed = true;
    options.onClose();
  };
  call.on('cancelled', close);
  call.on('close', close);
  call.on('error', close);
  return {
    get closed() {
      return closed;
    },
    allowSnapshot(count: number) {
      headroom += count;
    },
    send(message: Res) {
      if (closed) return;
      call.write(message);
      const waiting = call.writableLength;
      if (waiting <= options.maxBuffered + headroom) return;
      close();
      call.emit(
        'error',
        new GrpcError(
          status.RESOURCE_EXHAUSTED,
          'RESOURCE_EXHAUSTED',
          `this ${options.what} watch fell ${waiting} messages behind (WATCH_MAX_BUFFERED ${options.maxBuffered}): read it faster, or watch again with initial: true to catch up from a snapshot`,
        ),
      );
    },
  };
}
