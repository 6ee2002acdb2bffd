import type { DetectionResult, DeviceProvider } from '../provider';
import { readHostInfo, type HostInfo, type HostInfoSource, type HostReadOptions } from './host-info';
import { exists, hostPath } from './sysfs';

/**
 * The "host" provider owns no devices: its pass proves the host tree is readable and its
 * facts (CPU, memory, OS) come from `readHostInfo`, which the agent feeds to the assembler
 * alongside the (empty) detection result.
 */
export class HostProvider implements DeviceProvider, HostInfoSource {
  readonly name = 'host';

  constructor(
    private readonly root = '/',
    private readonly options: HostReadOptions = {},
  ) {}

  available(): Promise<boolean> {
    return exists(hostPath(this.root, '/proc/cpuinfo'));
  }

  async detect(): Promise<DetectionResult> {
    await this.readHostInfo();
    return {};
  }

  readHostInfo(): Promise<HostInfo> {
    return readHostInfo(this.root, this.options);
  }
}
