import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, defineConfig, loadConfig, REDACTED, redactConfig } from './config';
import { duration } from './fields';
import { renderConfigMarkdown } from './markdown';
import { servicePorts, sharedConfigFields } from './shared';

const schema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50052, http: 8081 }),
  HEARTBEAT_INTERVAL_S: duration({ default: 15, min: 1, desc: 'Heartbeat period.' }),
});

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.message}`);
    throw error;
  }
  return [];
}

describe('shared config fields', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-shared-'));
  const pem = (name: string): string => {
    const path = join(dir, name);
    writeFileSync(path, 'pem');
    return path;
  };

  it('runs a local stack with no variables set', () => {
    const config = loadConfig(schema, {});
    expect(config).toMatchObject({
      GPUFLEET_CLUSTER: 'dev',
      NATS_URL: ['nats://127.0.0.1:4222'],
      GRPC_PORT: 50052,
      HTTP_PORT: 8081,
      LOG_LEVEL: 'info',
      HEARTBEAT_INTERVAL_S: 15,
    });
    expect(config.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(config.GPUFLEET_ADMIN_TOKEN).toBeUndefined();
  });

  it('accepts several NATS servers', () => {
    expect(loadConfig(schema, { NATS_URL: 'nats://n0:4222, tls://n1:4222' }).NATS_URL).toEqual([
      'nats://n0:4222',
      'tls://n1:4222',
    ]);
  });

  it.each(['Prod', 'eu.west', '-a', 'a_b', ''.padEnd(64, 'a')])('rejects cluster name %p', (name) => {
    expect(problemsOf({ GPUFLEET_CLUSTER: name })[0]).toMatch(/^GPUFLEET_CLUSTER: expected a lower-case token/);
  });

  it('needs both halves of a TLS key pair and a server pair for mutual TLS', () => {
    expect(problemsOf({ GRPC_TLS_CA_FILE: pem('ca.pem') })).toEqual([
      'GRPC_TLS_CA_FILE: is set, so GRPC_TLS_CERT_FILE must be set too',
      'GRPC_TLS_CA_FILE: is set, so GRPC_TLS_KEY_FILE must be set too',
    ]);
    expect(problemsOf({ NATS_TLS_KEY_FILE: pem('key.pem') })).toEqual([
      'NATS_TLS_KEY_FILE: is set, so NATS_TLS_CERT_FILE must be set too',
    ]);
    expect(
      loadConfig(schema, {
        GRPC_TLS_CERT_FILE: pem('tls.crt'),
        GRPC_TLS_KEY_FILE: pem('tls.key'),
        GRPC_TLS_CA_FILE: pem('ca.crt'),
      }).GRPC_TLS_CA_FILE,
    ).toBe(join(dir, 'ca.crt'));
  });

  it('refuses two NATS authentication methods at once', () => {
    expect(problemsOf({ NATS_TOKEN: 's3cret', NATS_USER: 'u', NATS_PASSWORD: 'p' })).toEqual([
      'NATS_TOKEN: must not be set together with NATS_USER',
    ]);
  });

  it('stops on a credentials file that does not exist', () => {
    expect(problemsOf({ NATS_CREDS_FILE: '/nonexistent/nats.creds' })).toEqual([
      'NATS_CREDS_FILE: expected a readable file, got "/nonexistent/nats.creds" (no such file)',
    ]);
  });

  it('reports every bad shared variable together', () => {
    expect(problemsOf({ GRPC_PORT: 'abc', LOG_LEVEL: 'loud', OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toEqual([
      'GRPC_PORT: expected an integer 1-65535, got "abc"',
      'LOG_LEVEL: expected one of trace, debug, info, warn, error, fatal, silent, got "loud"',
      'OTEL_EXPORTER_OTLP_ENDPOINT: expected a http:// or https:// URL, got "grpc://collector:4317" (scheme "grpc" is not allowed)',
    ]);
  });

  it('redacts the password, tokens and admin token', () => {
    const config = loadConfig(schema, { NATS_USER: 'svc', NATS_PASSWORD: 'pw', GPUFLEET_ADMIN_TOKEN: 'adm' });
    expect(redactConfig(config)).toMatchObject({ NATS_USER: 'svc', NATS_PASSWORD: REDACTED, GPUFLEET_ADMIN_TOKEN: REDACTED });
  });

  it('documents every shared variable', () => {
    const markdown = renderConfigMarkdown(schema);
    for (const name of Object.keys(sharedConfigFields)) expect(markdown).toContain(`| \`${name}\` |`);
    expect(markdown).toContain('| `GRPC_PORT` | integer 1-65535 | `50052` |');
  });
});
