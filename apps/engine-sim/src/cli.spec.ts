import { ConfigError } from '@gpufleet/config';
import { helpText, loadEngineSimConfig, parseArgs, UsageError } from './cli';
import { defaultReplicaName } from './config';

describe('parseArgs', () => {
  it('maps vLLM-like flags to their variables, with = or a separate value', () => {
    const args = parseArgs(['--max-num-seqs', '8', '--itl-ms=2.5', '--seed', '-3', '--no-enable-prefix-caching', '-tp', '4']);
    expect(args.env).toEqual({ MAX_NUM_SEQS: '8', ITL_MS: '2.5', SEED: '-3', ENABLE_PREFIX_CACHING: 'false', TENSOR_PARALLEL_SIZE: '4' });
    expect(args.flagOf.ITL_MS).toBe('--itl-ms');
  });

  it('takes `serve MODEL` like vllm, several served names, and snake_case spellings', () => {
    const args = parseArgs(['serve', 'org/model', '--served-model-name', 'a', 'b', '--max_model_len', '4096']);
    expect(args.env).toEqual({ MODEL: 'org/model', SERVED_MODEL_NAME: 'a,b', MAX_MODEL_LEN: '4096' });
  });

  it('accepts and reports vLLM flags that mean nothing here', () => {
    const args = parseArgs(['--dtype', 'bfloat16', '--trust-remote-code', '--gpu-memory-utilization=0.9', '--port', '9000']);
    expect(args.ignored).toEqual(['--dtype', '--trust-remote-code', '--gpu-memory-utilization']);
    expect(args.env).toEqual({ HTTP_PORT: '9000' });
  });

  it('refuses unknown flags, missing values and extra positionals', () => {
    expect(() => parseArgs(['--turbo'])).toThrow(new UsageError('unknown flag --turbo'));
    expect(() => parseArgs(['--port'])).toThrow('INVALID_ARGUMENTS: --port expects a value (see --help)');
    expect(() => parseArgs(['--port', '--itl-ms', '1'])).toThrow('--port expects a value');
    expect(() => parseArgs(['a', 'b'])).toThrow('one positional argument (the model) expected, got "a" "b"');
    expect(() => parseArgs(['m', '--model', 'n'])).toThrow('the model is given twice');
  });

  it('has help naming every flag and its variable', () => {
    const help = helpText();
    expect(help).toContain('--max-num-seqs (MAX_NUM_SEQS)');
    expect(help).toContain('--seed (SEED)');
    expect(help).toContain('--port (HTTP_PORT)');
  });
});

describe('loadEngineSimConfig', () => {
  it('reads defaults, variables and flags, flags winning', () => {
    const { config } = loadEngineSimConfig(['--max-num-seqs', '3'], { MAX_NUM_SEQS: '9', ITL_MS: '0', REPLICA_NAME: 'r-1' });
    expect(config.MAX_NUM_SEQS).toBe(3);
    expect(config.ITL_MS).toBe(0);
    expect(config.REPLICA_NAME).toBe('r-1');
    expect(config.HTTP_PORT).toBe(8000);
    expect(config.BLOCK_SIZE).toBe(16);
    expect(config.NATS_URL).toBeUndefined();
    expect(config.ERROR_FORMAT).toBe('vllm');
  });

  it('names the flag and the variable of a bad value, and plain variables by name', () => {
    let error: unknown;
    try {
      loadEngineSimConfig(['--max-num-seqs', 'many', '--error-rate', '2'], { BLOCK_SIZE: '0' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('--max-num-seqs (MAX_NUM_SEQS): expected an integer >= 1, got "many"');
    expect(message).toContain('--error-rate (ERROR_RATE): expected a number 0-1, got "2"');
    expect(message).toContain('BLOCK_SIZE: expected an integer 1-1024, got "0"');
  });

  it('keeps replica names usable as a NATS subject token', () => {
    expect(() => loadEngineSimConfig(['--replica-name', 'a.b'], {})).toThrow(/REPLICA_NAME\): expected a name of A-Z/);
    expect(defaultReplicaName('gpu-01.example.com')).toBe('gpu-01-example-com');
  });
});
