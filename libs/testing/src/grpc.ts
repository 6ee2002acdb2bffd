import type { ServiceError } from '@grpc/grpc-js';

/** The error a gRPC call failed with; throws when it succeeded. */
export async function grpcError(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call succeeded');
}
