import { globToRegExp, isSelected } from './patterns';

describe('file selection with huggingface_hub allow/ignore semantics', () => {
  const repo = ['config.json', 'tokenizer/tokenizer.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'original/consolidated.pth', 'README.md', 'Q4_K_M/model.gguf'];
  const pick = (allow: string[], ignore: string[] = []) => repo.filter((p) => isSelected(p, allow, ignore));

  it('selects everything when there are no patterns', () => {
    expect(pick([])).toEqual(repo);
  });

  it('lets * cross directory separators, as fnmatch does', () => {
    expect(pick(['*.json'])).toEqual(['config.json', 'tokenizer/tokenizer.json']);
  });

  it('reads a pattern ending in / as everything under that directory', () => {
    expect(pick(['tokenizer/'])).toEqual(['tokenizer/tokenizer.json']);
    expect(pick([], ['original/'])).not.toContain('original/consolidated.pth');
  });

  it('drops what an ignore pattern matches even when allowed', () => {
    expect(pick(['*.safetensors', '*.json'], ['tokenizer/*', 'model-00002*'])).toEqual(['config.json', 'model-00001-of-00002.safetensors']);
  });

  it('supports ?, [seq] and [!seq] classes and is case-sensitive', () => {
    expect(pick(['model-0000[1]-of-?????.safetensors'])).toEqual(['model-00001-of-00002.safetensors']);
    expect(pick(['[!mo]*'])).toEqual(['config.json', 'tokenizer/tokenizer.json', 'README.md', 'Q4_K_M/model.gguf']);
    expect(pick(['*.JSON'])).toEqual([]);
    expect(pick(['Q4_K_M/*'])).toEqual(['Q4_K_M/model.gguf']);
  });

  it('treats regex metacharacters and an unclosed [ literally', () => {
    expect(globToRegExp('a+b(1).txt').test('a+b(1).txt')).toBe(true);
    expect(globToRegExp('a+b(1).txt').test('aab(1)xtxt')).toBe(false);
    expect(globToRegExp('x[1').test('x[1')).toBe(true);
    expect(globToRegExp('[]]').test(']')).toBe(true);
  });
});
