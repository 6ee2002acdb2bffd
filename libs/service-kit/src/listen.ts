/**
 * Where a service's ops and gRPC servers listen when its configuration has no HOST: loopback,
 * so nothing is open to the network by accident. The one place to change that default.
 */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';

/** HOST when the service declares one, else DEFAULT_LISTEN_HOST. */
export function listenHost(config: { readonly HOST?: string }): string {
  return config.HOST ?? DEFAULT_LISTEN_HOST;
}
