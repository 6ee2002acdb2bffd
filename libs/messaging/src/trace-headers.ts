import { Context, context, propagation } from '@opentelemetry/api';
import { MsgHdrs } from 'nats';

// NATS has no OpenTelemetry instrumentation, so trace context rides in message headers.
export function injectTraceContext(headers: MsgHdrs, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, { set: (carrier, key, value) => carrier.set(key, value) });
}

export function extractTraceContext(headers: MsgHdrs | undefined): Context {
  if (!headers) return context.active();
  return propagation.extract(context.active(), headers, {
    get: (carrier, key) => carrier.get(key) || undefined,
    keys: (carrier) => carrier.keys(),
  });
}
