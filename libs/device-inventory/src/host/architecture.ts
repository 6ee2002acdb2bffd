/** Node.js `process.arch` → the names uname and the inventory use. */
const ARCHITECTURES: Record<string, string> = {
  x64: 'x86_64',
  arm64: 'aarch64',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

export function machineArchitecture(nodeArch: string = process.arch): string {
  return ARCHITECTURES[nodeArch] ?? nodeArch;
}
