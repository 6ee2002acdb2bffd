import { ToolOutputError } from '../shared/tool-output';

/** Driver and CUDA versions as nvidia-smi reports them. */
export interface NvidiaDriverVersions {
  driverVersion: string;
  /** The newest CUDA runtime the driver supports, e.g. "12.4"; absent on drivers that do not say. */
  cudaVersion?: string;
}

/**
 * The command the provider reads versions from: `nvidia-smi -q -d COMPUTE` prints the log header
 * (`Driver Version : 550.54.15`, `CUDA Version : 12.4`) and one short section per GPU, which is
 * cheaper than the full `-q` and steadier to read than the banner of plain `nvidia-smi`.
 */
export const NVIDIA_VERSION_QUERY = ['-q', '-d', 'COMPUTE'] as const;

/**
 * Reads the versions from `nvidia-smi -q` (`CUDA Version : 12.0`) or from the banner of plain
 * `nvidia-smi` (`Driver Version: 535.216.01   CUDA Version: 12.2`).
 */
export function parseNvidiaDriverVersions(text: string): NvidiaDriverVersions {
  const driverVersion = /Driver Version\s*:\s*([0-9][0-9.]*)/.exec(text)?.[1];
  if (driverVersion === undefined) {
    throw new ToolOutputError(`nvidia-smi ${NVIDIA_VERSION_QUERY.join(' ')}`, 'no "Driver Version" line in the output');
  }
  const cudaVersion = /CUDA Version\s*:\s*([0-9][0-9.]*)/.exec(text)?.[1];
  return cudaVersion === undefined ? { driverVersion } : { driverVersion, cudaVersion };
}
