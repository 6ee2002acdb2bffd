import { Node, NodeRuntimeReport } from '@gpufleet/contracts';
import { renderTable } from './format';
import { nodeColumns, sandboxSummary } from './resources';

const node = (runtime?: Partial<NodeRuntimeReport>) => Node.fromPartial({ name: 'gpu-0', pool: 'h100', runtime: runtime && NodeRuntimeReport.fromPartial({ node: 'gpu-0', runtime: 'process', ...runtime }) });

describe('gpufleet get nodes', () => {
  it('says in -o wide whether the node sandboxes pods and whether namespaces may share it', () => {
    expect(sandboxSummary(node({ sandboxed: true }))).toBe('yes');
    expect(sandboxSummary(node({ sandboxed: false, sharingAllowed: true }))).toBe('no (shared)');
    expect(sandboxSummary(node({ sandboxed: false }))).toBe('no (1 namespace)');
    expect(sandboxSummary(node())).toBe('-');
    const [header, row] = renderTable([node({ sandboxed: false })], nodeColumns, true).split('\n');
    expect(header).toMatch(/\bDRIVER\s+SANDBOX\s+LAST-HEARTBEAT$/);
    expect(row).toContain('no (1 namespace)');
    expect(renderTable([node({ sandboxed: true })], nodeColumns, false)).not.toContain('SANDBOX');
  });
});
