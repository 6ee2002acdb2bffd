import type { DetectionResult, DeviceProvider } from '../provider';
import { readRdmaNics } from './rdma';
import { exists, hostPath } from './sysfs';

/** RDMA NIC ports from /sys/class/infiniband (InfiniBand and RoCE alike). */
export class RdmaProvider implements DeviceProvider {
  readonly name = 'rdma';

  constructor(private readonly root = '/') {}

  /** Needs sysfs; a node without RDMA hardware is still "available" and reports no NICs. */
  available(): Promise<boolean> {
    return exists(hostPath(this.root, '/sys/class'));
  }

  async detect(): Promise<DetectionResult> {
    return { nics: await readRdmaNics(this.root) };
  }
}
