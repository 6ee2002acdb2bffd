/**
 * Where a service's ops and gRPC servers listen when its configuration has no HOST: every
 * interface, as before the shared bootstrap. The one place to change that default.
 */
export const DEFAULT_LISTEN_HOST = '0.0.0.0';

/** HOST when the service declares one, else DEFAULT_LISTEN_HOST. */
export function listenHost(config: { readonly HOST?: string }): string {
  return config.HOST ?? DEFAULT_LISTEN_HOST;
}
