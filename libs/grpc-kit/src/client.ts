import { readFileSync } from 'fs';
import { CallOptions, ChannelCredentials, Client, ClientReadableStream, Metadata, ServiceError, credentials } from '@grpc/grpc-js';

export interface ClientTlsSettings {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/**
 * Largest response a gpufleet client accepts: 64 MiB instead of gRPC's 4 MiB, so that listing
 * every node of a 1,000-node fleet (about 4.4 MB) works before List* pages (issue 12).
 */
export const MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Channel options of every gpufleet client (pass as the third argument of a generated client). */
export function clientOptions(): { 'grpc.max_receive_message_length': number } {
  return { 'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_BYTES };
}

export function channelCredentials(tls?: ClientTlsSettings): ChannelCredentials {
  if (!tls) return credentials.createInsecure();
  return credentials.createSsl(
    tls.caFile ? readFileSync(tls.caFile) : null,
    tls.keyFile ? readFileSync(tls.keyFile) : null,
    tls.certFile ? readFileSync(tls.certFile) : null,
  );
}

// The last overload ts-proto generates for a unary method; TypeScript infers from it.
type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

/** Calls a generated grpc-js unary method as a promise, with a deadline. */
export function callUnary<Req, Res>(
  client: Client,
  method: UnaryMethod<Req, Res>,
  request: Req,
  { metadata = new Metadata(), deadlineMs = 10_000 }: { metadata?: Metadata; deadlineMs?: number } = {},
): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(client, request, metadata, { deadline: new Date(Date.now() + deadlineMs) }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/** Iterates a server stream; ends when the server ends it or the caller breaks out. */
export async function* iterateStream<Res>(stream: ClientReadableStream<Res>): AsyncGenerator<Res> {
  try {
    for await (const item of stream) yield item as Res;
  } finally {
    stream.cancel();
  }
}
