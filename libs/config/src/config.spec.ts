import { inspect } from 'node:util';
import { ConfigError, defineConfig, EXIT_CONFIG, isSecretField, loadConfig, loadConfigOrExit, REDACTED, redactConfig } from './config';
import { bool, duration, int, list, port, str, url } from './fields';

const schema = defineConfig({
  GRPC_PORT: port({ default: 50051, desc: 'gRPC port' }),
  NODE_NAME: str({ desc: 'node' }),
  REPLICAS: int({ optional: true, min: 1, desc: 'replicas' }),
  VERBOSE: bool({ default: false, desc: 'verbose' }),
  TIMEOUT_S: duration({ default: 45, desc: 'timeout' }),
  SERVERS: list({ default: ['nats://127.0.0.1:4222'], of: url({ protocols: ['nats'], desc: 's' }), desc: 'servers' }),
  DB_PASSWORD: str({ optional: true, secret: true, desc: 'password' }),
});

describe('loadConfig', () => {
  it('returns typed values, applying defaults for unset and empty variables', () => {
    const config = loadConfig(schema, { NODE_NAME: 'gpu-node-1', GRPC_PORT: '', VERBOSE: 'yes', TIMEOUT_S: '1m' });
    expect({ ...config }).toEqual({
      GRPC_PORT: 50051,
      NODE_NAME: 'gpu-node-1',
      REPLICAS: undefined,
      VERBOSE: true,
      TIMEOUT_S: 60,
      SERVERS: ['nats://127.0.0.1:4222'],
      DB_PASSWORD: undefined,
    });
  });

  it('trims values before parsing', () => {
    expect(loadConfig(schema, { NODE_NAME: '  n1 ', GRPC_PORT: ' 9000 ' })).toMatchObject({ NODE_NAME: 'n1', GRPC_PORT: 9000 });
  });

  it('returns a deeply frozen object that does not share the default array', () => {
    const config = loadConfig(schema, { NODE_NAME: 'n' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.SERVERS)).toBe(true);
    expect(config.SERVERS).not.toBe(schema.fields.SERVERS.defaultValue);
  });

  it('reads process.env when no env is given', () => {
    process.env.NODE_NAME = 'from-process-env';
    try {
      expect(loadConfig(schema).NODE_NAME).toBe('from-process-env');
    } finally {
      delete process.env.NODE_NAME;
    }
  });

  it('names every bad variable and what was expected in one error', () => {
    let error: unknown;
    try {
      loadConfig(schema, { GRPC_PORT: 'abc', REPLICAS: '0', SERVERS: 'nats://a:4222,redis://b' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.reason).toBe('INVALID_CONFIG');
    expect(configError.problems.map((p) => p.variable)).toEqual(['GRPC_PORT', 'NODE_NAME', 'REPLICAS', 'SERVERS']);
    expect(configError.message).toBe(
      [
        'INVALID_CONFIG: 4 environment variables are invalid:',
        '  GRPC_PORT: expected an integer 1-65535, got "abc"',
        '  NODE_NAME: required but not set; expected a string',
        '  REPLICAS: expected an integer >= 1, got "0"',
        '  SERVERS: expected a comma-separated list of URL (nats), got "nats://a:4222,redis://b" (item 2: expected a nats:// URL; scheme "redis" is not allowed)',
      ].join('\n'),
    );
  });

  it('never quotes a secret value in an error', () => {
    const secretSchema = defineConfig({ API_TOKEN: int({ desc: 'odd but possible' }) });
    expect(() => loadConfig(secretSchema, { API_TOKEN: 'hunter2' })).toThrow(
      'API_TOKEN: expected an integer, got a secret value of 7 characters',
    );
  });

  it('truncates very long values in messages', () => {
    const message = (() => {
      try {
        loadConfig(schema, { NODE_NAME: 'n', GRPC_PORT: 'x'.repeat(500) });
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(message.length).toBeLessThan(250);
  });

  it('requires companion variables and refuses conflicting ones', () => {
    const tls = defineConfig({
      CERT_FILE: str({ optional: true, requires: ['KEY_FILE'], desc: 'cert' }),
      KEY_FILE: str({ optional: true, requires: ['CERT_FILE'], desc: 'key' }),
      USER: str({ optional: true, desc: 'user' }),
      TOKEN: str({ optional: true, secret: true, conflicts: ['USER'], desc: 'token' }),
    });
    expect(() => loadConfig(tls, { CERT_FILE: '/c', TOKEN: 't', USER: 'u' })).toThrow(
      [
        'INVALID_CONFIG: 2 environment variables are invalid:',
        '  CERT_FILE: is set, so KEY_FILE must be set too',
        '  TOKEN: must not be set together with USER',
      ].join('\n'),
    );
    expect(loadConfig(tls, { CERT_FILE: '/c', KEY_FILE: '/k' })).toMatchObject({ CERT_FILE: '/c', KEY_FILE: '/k' });
  });
});

describe('defineConfig', () => {
  it('rejects names that are not environment variable names', () => {
    expect(() => defineConfig({ grpcPort: port({ desc: 'x' }) })).toThrow(/UPPER_SNAKE_CASE/);
  });

  it('rejects references to variables outside the schema', () => {
    expect(() => defineConfig({ A: str({ optional: true, requires: ['B'], desc: 'x' }) })).toThrow(
      'defineConfig: A refers to B, which is not in the schema',
    );
  });
});

describe('redactConfig', () => {
  const config = loadConfig(schema, { NODE_NAME: 'n', DB_PASSWORD: 'hunter2' });

  it('replaces secrets that are set and keeps everything else', () => {
    expect(redactConfig(config)).toMatchObject({ DB_PASSWORD: REDACTED, NODE_NAME: 'n', GRPC_PORT: 50051 });
    expect(redactConfig(loadConfig(schema, { NODE_NAME: 'n' })).DB_PASSWORD).toBeUndefined();
  });

  it('keeps secrets out of JSON.stringify and util.inspect of the config itself', () => {
    expect(JSON.stringify(config)).not.toContain('hunter2');
    expect(JSON.stringify(config)).toContain(REDACTED);
    expect(inspect(config)).not.toContain('hunter2');
    expect(config.DB_PASSWORD).toBe('hunter2');
  });

  it('redacts by name on objects that did not come from loadConfig, but not file paths', () => {
    expect(
      redactConfig({ NATS_TOKEN: 't', REDIS_PASSWORD: 'p', NATS_CREDS_FILE: '/etc/nats.creds', NATS_NKEY_SEED_FILE: '/s', PORT: 1 }),
    ).toEqual({ NATS_TOKEN: REDACTED, REDIS_PASSWORD: REDACTED, NATS_CREDS_FILE: '/etc/nats.creds', NATS_NKEY_SEED_FILE: '/s', PORT: 1 });
  });
});

describe('loadConfigOrExit', () => {
  it('prints every problem and exits with EX_CONFIG', () => {
    const written: string[] = [];
    const exit = jest.fn((code: number): never => {
      throw new Error(`exit ${code}`);
    });
    expect(() => loadConfigOrExit(schema, { env: {}, write: (t) => written.push(t), exit })).toThrow(`exit ${EXIT_CONFIG}`);
    expect(written.join('')).toContain('NODE_NAME: required but not set');
  });

  it('returns the config when it is valid', () => {
    expect(loadConfigOrExit(schema, { env: { NODE_NAME: 'n' } }).NODE_NAME).toBe('n');
  });
});

describe('secret names', () => {
  it('hides settings named like credentials and shows counts and seeds that only contain the word', () => {
    expect(['NATS_TOKEN', 'GPUFLEET_ADMIN_TOKEN', 'REDIS_PASSWORD', 'OPENAI_API_KEY', 'NATS_NKEY_SEED'].filter((n) => isSecretField(n))).toHaveLength(5);
    expect(['MAX_TOKENS', 'MEAN_OUTPUT_TOKENS', 'SEED', 'NATS_NKEY_SEED_FILE', 'TOKEN_BUDGET_PATH'].filter((n) => isSecretField(n))).toEqual([]);
  });

  it('shows a field declared `secret: false` whatever its name', () => {
    expect(isSecretField('PREFILL_US_PER_TOKEN', int({ default: 50, secret: false, desc: 'µs per token' }))).toBe(false);
    expect(isSecretField('PREFILL_US_PER_TOKEN')).toBe(true);
  });
});

describe('passwords inside URLs', () => {
  const urls = defineConfig({
    NATS_URL: list({ default: ['nats://127.0.0.1:4222'], of: url({ protocols: ['nats', 'tls'], desc: 'a server' }), desc: 'servers' }),
    REDIS_URL: url({ optional: true, protocols: ['redis', 'rediss'], desc: 'redis' }),
  });

  it('are redacted in the printed config, user and host kept; the config itself keeps them', () => {
    const config = loadConfig(urls, { NATS_URL: 'nats://svc:s3cret@n1:4222,nats://n2:4222', REDIS_URL: 'redis://:hunter2@cache:6379/0' });
    expect(redactConfig(config)).toEqual({ NATS_URL: [`nats://svc:${REDACTED}@n1:4222`, 'nats://n2:4222'], REDIS_URL: `redis://:${REDACTED}@cache:6379/0` });
    expect(JSON.stringify(config)).not.toMatch(/s3cret|hunter2/);
    expect(config.REDIS_URL).toBe('redis://:hunter2@cache:6379/0');
  });

  it('are redacted in the error that quotes a bad value', () => {
    expect(() => loadConfig(urls, { REDIS_URL: 'http://:hunter2@cache' })).toThrow(/REDIS_URL: expected .*, got "http:\/\/:\[REDACTED\]@cache"/);
    expect(() => loadConfig(urls, { REDIS_URL: 'http://:hunter2@cache' })).not.toThrow(/hunter2/);
  });
});
