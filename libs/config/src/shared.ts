import type { ConfigOf } from './config';
import { file, list, port, str, url } from './fields';

/** pino levels; `silent` turns logging off (tests). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A cluster name is one NATS subject token (`gpufleet.<cluster>.…`) and a DNS label. */
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The variables every gpufleet service reads. Spread them into a service schema and override
 * the ports with `servicePorts`:
 *
 * ```ts
 * export const schedulerConfig = defineConfig({
 *   ...sharedConfigFields,
 *   ...servicePorts({ grpc: 50051, http: 8080 }),
 *   NOT_READY_TIMEOUT_S: duration({ default: 45, min: 1, desc: '…' }),
 * });
 * ```
 */
export const sharedConfigFields = {
  GPUFLEET_CLUSTER: str({
    default: 'dev',
    pattern: CLUSTER_NAME,
    patternDesc: 'a lower-case token of a-z, 0-9 and "-" (at most 63 characters, no dots)',
    desc: 'Name of this cluster; the second token of every NATS subject (gpufleet.<cluster>.…).',
  }),
  NATS_URL: list({
    default: ['nats://127.0.0.1:4222'],
    of: url({ protocols: ['nats', 'tls'], desc: 'a NATS server' }),
    desc: 'NATS server URL(s), comma-separated; the client picks among them and fails over. A tls:// URL means TLS or no connection.',
  }),
  NATS_CREDS_FILE: file({
    optional: true,
    conflicts: ['NATS_NKEY_SEED_FILE', 'NATS_USER', 'NATS_TOKEN'],
    desc: 'NATS user credentials file (JWT and nkey seed), for decentralised auth.',
  }),
  NATS_NKEY_SEED_FILE: file({
    optional: true,
    conflicts: ['NATS_USER', 'NATS_TOKEN'],
    desc: 'File holding an nkey seed (SU…) to authenticate to NATS with.',
  }),
  NATS_USER: str({ optional: true, requires: ['NATS_PASSWORD'], desc: 'NATS user name.' }),
  NATS_PASSWORD: str({ optional: true, secret: true, requires: ['NATS_USER'], desc: 'NATS password.' }),
  NATS_TOKEN: str({ optional: true, secret: true, conflicts: ['NATS_USER'], desc: 'NATS authentication token.' }),
  NATS_TLS_CA_FILE: file({ optional: true, desc: 'CA bundle (PEM) to verify the NATS servers with.' }),
  NATS_TLS_CERT_FILE: file({
    optional: true,
    requires: ['NATS_TLS_KEY_FILE'],
    desc: 'Client certificate (PEM) presented to NATS (mutual TLS).',
  }),
  NATS_TLS_KEY_FILE: file({
    optional: true,
    requires: ['NATS_TLS_CERT_FILE'],
    desc: 'Private key (PEM) of NATS_TLS_CERT_FILE.',
  }),
  GRPC_PORT: port({ default: 50051, desc: 'Port of the gRPC server.' }),
  HTTP_PORT: port({ default: 8080, desc: 'Port of the HTTP server (/healthz, /readyz, /metrics).' }),
  GRPC_TLS_CERT_FILE: file({
    optional: true,
    requires: ['GRPC_TLS_KEY_FILE'],
    desc: 'Server certificate (PEM); when set the gRPC server speaks TLS only.',
  }),
  GRPC_TLS_KEY_FILE: file({
    optional: true,
    requires: ['GRPC_TLS_CERT_FILE'],
    desc: 'Private key (PEM) of GRPC_TLS_CERT_FILE.',
  }),
  GRPC_TLS_CA_FILE: file({
    optional: true,
    requires: ['GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE'],
    desc: 'CA bundle (PEM); when set, gRPC clients must present a certificate it signed (mutual TLS).',
  }),
  GPUFLEET_ADMIN_TOKEN: str({
    optional: true,
    secret: true,
    desc: "The bootstrap admin's bearer token (system:admin); when set, every gRPC API needs a token and a role (docs/security.md); unset leaves every API open (a throwaway stack only).",
  }),
  LOG_LEVEL: str({ default: 'info', choices: LOG_LEVELS, desc: 'Lowest level of log lines written.' }),
  OTEL_EXPORTER_OTLP_ENDPOINT: url({
    optional: true,
    protocols: ['http', 'https'],
    desc: 'OTLP/HTTP collector base URL (e.g. http://otel-collector:4318); traces are exported only when set.',
  }),
  OTEL_SERVICE_NAME: str({ optional: true, desc: 'Service name on traces; defaults to the service’s own name.' }),
} as const;

export type SharedConfig = ConfigOf<typeof sharedConfigFields>;

/**
 * `HOST`, `GRPC_PORT` and `HTTP_PORT` with this service's defaults; spread after
 * `sharedConfigFields`. HOST defaults to loopback: a service started by hand is not a network
 * service until someone says so; the images set HOST=0.0.0.0 (a pod is reached on its IP).
 */
export function servicePorts(defaults: { grpc: number; http: number }) {
  return {
    HOST: str({
      default: '127.0.0.1',
      pattern: /^[A-Za-z0-9.:[\]-]+$/,
      patternDesc: 'an IP address or host name',
      desc: 'Address the HTTP and gRPC servers listen on: 127.0.0.1 this machine only (the default), 0.0.0.0 every IPv4 address (what the images set).',
    }),
    GRPC_PORT: port({ default: defaults.grpc, desc: 'Port of the gRPC server.' }),
    HTTP_PORT: port({ default: defaults.http, desc: 'Port of the HTTP server (/healthz, /readyz, /metrics).' }),
  } as const;
}
