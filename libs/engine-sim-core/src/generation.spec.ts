import { countTokens, encode } from '@gpufleet/openai-protocol';
import { ManualClock } from './clock';
import { embedTokens } from './embedding';
import { FaultInjector } from './faults';
import { generateText, generationSeed } from './generation';
import { hash53, Rng } from './hash';

describe('generateText', () => {
  const base = { seed: 42, maxTokens: 50, meanOutputTokens: 20 };

  it('answers the same for the same seed, differently for another', () => {
    expect(generateText(base)).toEqual(generateText(base));
    expect(generateText(base).text).not.toBe(generateText({ ...base, seed: 43 }).text);
  });

  it('produces one tokenizer token per generated piece', () => {
    for (let seed = 0; seed < 50; seed++) {
      const out = generateText({ ...base, seed, ignoreEos: true });
      expect(out.pieces.join('')).toBe(out.text);
      expect(countTokens(out.text)).toBe(out.tokens);
    }
  });

  it('continues a prompt with a leading space, still one token per piece', () => {
    const out = generateText({ ...base, continuation: true, ignoreEos: true });
    expect(out.text.startsWith(' ')).toBe(true);
    expect(countTokens(out.text)).toBe(out.tokens);
  });

  it('runs to max_tokens with ignore_eos and says length', () => {
    const out = generateText({ ...base, maxTokens: 7, ignoreEos: true });
    expect(out).toMatchObject({ tokens: 7, finishReason: 'length', stopReason: null });
  });

  it('stops at its natural length below max_tokens, never below min_tokens', () => {
    const lengths = Array.from({ length: 200 }, (_, seed) => generateText({ seed, maxTokens: 1000, meanOutputTokens: 20 }));
    for (const out of lengths) {
      expect(out.finishReason).toBe('stop');
      expect(out.tokens).toBeGreaterThanOrEqual(1);
      expect(out.tokens).toBeLessThanOrEqual(39);
    }
    const mean = lengths.reduce((s, o) => s + o.tokens, 0) / lengths.length;
    expect(mean).toBeGreaterThan(15);
    expect(mean).toBeLessThan(25);
    expect(generateText({ seed: 1, maxTokens: 100, meanOutputTokens: 1, minTokens: 30 }).tokens).toBe(30);
  });

  it('cuts the text before a stop string and reports it', () => {
    const full = generateText({ ...base, ignoreEos: true, maxTokens: 40 });
    const word = full.pieces[5];
    const out = generateText({ ...base, ignoreEos: true, maxTokens: 40, stop: [word] });
    expect(out.finishReason).toBe('stop');
    expect(out.stopReason).toBe(word);
    expect(out.text).toBe(full.text.slice(0, full.text.indexOf(word)));
    expect(out.pieces.join('')).toBe(out.text);
    expect(out.tokens).toBeLessThanOrEqual(6);
  });

  it('adds log-probabilities with the requested alternatives', () => {
    const out = generateText({ ...base, maxTokens: 3, ignoreEos: true, topLogprobs: 2 });
    expect(out.logprobs).toHaveLength(3);
    for (const [i, lp] of (out.logprobs ?? []).entries()) {
      expect(lp.token).toBe(out.pieces[i]);
      expect(lp.logprob).toBeLessThanOrEqual(0);
      expect(lp.top_logprobs).toHaveLength(2);
      expect(lp.top_logprobs[0].token).toBe(lp.token);
    }
  });

  it('seeds from the request seed when given, else from the prompt', () => {
    const prompt = encode('hello there');
    expect(generationSeed(0, 5, prompt)).toBe(generationSeed(0, 5, encode('other prompt')));
    expect(generationSeed(0, undefined, prompt)).not.toBe(generationSeed(0, undefined, encode('other prompt')));
    expect(generationSeed(0, undefined, prompt)).not.toBe(generationSeed(1, undefined, prompt));
  });
});

describe('hash53 and Rng', () => {
  it('are deterministic safe integers and uniform-looking floats', () => {
    expect(hash53([1, 2, 3], 9)).toBe(hash53([1, 2, 3], 9));
    expect(hash53([1, 2, 3])).not.toBe(hash53([1, 2, 4]));
    expect(hash53([1, 2, 3])).not.toBe(hash53([1, 2, 3, 0]));
    expect(Number.isSafeInteger(hash53([7], 2 ** 52 + 5))).toBe(true);
    const rng = new Rng(3);
    const draws = Array.from({ length: 10_000 }, () => rng.float());
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    expect(draws.reduce((s, d) => s + d, 0) / draws.length).toBeCloseTo(0.5, 1);
  });
});

describe('embedTokens', () => {
  it('is unit length, deterministic, and closer for texts that share tokens', () => {
    const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, v, i) => s + v * b[i], 0);
    const a = embedTokens(encode('the cache holds the block'), 64);
    expect(dot(a, a)).toBeCloseTo(1, 5);
    expect(embedTokens(encode('the cache holds the block'), 64)).toEqual(a);
    const near = embedTokens(encode('the cache holds the block now'), 64);
    const far = embedTokens(encode('completely unrelated words here'), 64);
    expect(dot(a, near)).toBeGreaterThan(dot(a, far));
  });
});

describe('FaultInjector', () => {
  it('injects errors at the configured rate, the same sequence for a seed', () => {
    const draw = (seed: number): boolean[] => {
      const faults = new FaultInjector({ errorRate: 0.25, slowStartMs: 0, seed }, new ManualClock());
      return Array.from({ length: 4000 }, () => faults.injectError());
    };
    const fraction = draw(1).filter(Boolean).length / 4000;
    expect(fraction).toBeGreaterThan(0.22);
    expect(fraction).toBeLessThan(0.28);
    expect(draw(1)).toEqual(draw(1));
    expect(new FaultInjector({ errorRate: 0, slowStartMs: 0, seed: 1 }, new ManualClock()).injectError()).toBe(false);
  });

  it('calls for a crash exactly once, at the Nth answer', () => {
    const faults = new FaultInjector({ errorRate: 0, crashAfter: 3, slowStartMs: 0, seed: 0 }, new ManualClock());
    expect([faults.countAnswered(), faults.countAnswered(), faults.countAnswered(), faults.countAnswered()]).toEqual([false, false, true, false]);
  });

  it('is loading during the slow start only', () => {
    const clock = new ManualClock();
    const faults = new FaultInjector({ errorRate: 0, slowStartMs: 2000, seed: 0 }, clock);
    expect(faults.loading()).toBe(true);
    clock.advance(1500);
    expect(faults.loadingLeftMs()).toBe(500);
    clock.advance(500);
    expect(faults.loading()).toBe(false);
  });
});
