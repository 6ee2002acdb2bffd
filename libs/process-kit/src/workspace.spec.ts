import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { workspaceRoot } from './workspace';

describe('workspaceRoot', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'workspace-root-'));
    writeFileSync(join(root, 'package.json'), '{}');
    mkdirSync(join(root, 'dist/apps/node-runtime/src'), { recursive: true });
    mkdirSync(join(root, 'apps/node-runtime/src'), { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('finds the same root from the sources and from dist/', () => {
    expect(workspaceRoot(join(root, 'apps/node-runtime/src'))).toBe(root);
    expect(workspaceRoot(join(root, 'dist/apps/node-runtime/src'))).toBe(root);
    expect(workspaceRoot(root)).toBe(root);
  });

  it('takes the nearest package.json', () => {
    writeFileSync(join(root, 'apps/node-runtime/package.json'), '{}');
    expect(workspaceRoot(join(root, 'apps/node-runtime/src'))).toBe(join(root, 'apps/node-runtime'));
  });
});
