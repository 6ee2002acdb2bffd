import type { DeviceProvider } from '../provider';
import { AmdProvider, AscendProvider, NvidiaProvider, ToolOutputError, parseNpuSmiInfo, parseNvidiaTopology, parseRocmSmiCards } from './index';

describe('vendors entry point', () => {
  it('exports one provider per vendor, each named as the agent reports it', () => {
    const run = async (): Promise<string> => '';
    const providers: DeviceProvider[] = [new NvidiaProvider(run), new AmdProvider(run), new AscendProvider(run)];

    expect(providers.map((provider) => provider.name)).toEqual(['nvidia', 'amd', 'ascend']);
  });

  it('exports the parsers and their error type', () => {
    expect(() => parseNvidiaTopology('')).toThrow(ToolOutputError);
    expect(typeof parseRocmSmiCards).toBe('function');
    expect(typeof parseNpuSmiInfo).toBe('function');
  });
});
