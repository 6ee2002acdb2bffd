import { isToolMissing, runVendorTool, toolStarts } from './command';
import { exitError, missingTool, scriptedRunner } from './scripted-runner';

describe('isToolMissing', () => {
  it('recognises a spawn ENOENT and a shell\'s "command not found"', () => {
    expect(isToolMissing(missingTool('nvidia-smi'))).toBe(true);
    expect(isToolMissing(new Error('/bin/sh: 1: npu-smi: command not found'))).toBe(true);
  });

  it('a tool that ran and failed is not missing', () => {
    expect(isToolMissing(exitError(6, 'No devices were found'))).toBe(false);
  });
});

describe('runVendorTool', () => {
  it('a failure names the provider and the command line, and keeps the cause', async () => {
    const cause = exitError(255, 'Failed to initialize NVML');
    const run = scriptedRunner({ 'nvidia-smi': cause });

    const failure = await runVendorTool(run, 'nvidia', 'nvidia-smi', ['topo', '-m']).catch((error: Error) => error);

    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe('nvidia: `nvidia-smi topo -m` failed: Command failed with exit code 255\nFailed to initialize NVML');
    expect((failure as Error).cause).toBe(cause);
  });
});

describe('toolStarts', () => {
  it('is true for a tool that runs, even one that exits non-zero, and false for a missing one', async () => {
    await expect(toolStarts(scriptedRunner({ x: 'ok' }), 'x', [])).resolves.toBe(true);
    await expect(toolStarts(scriptedRunner({ x: exitError(1, 'boom') }), 'x', [])).resolves.toBe(true);
    await expect(toolStarts(scriptedRunner({ x: missingTool('x') }), 'x', [])).resolves.toBe(false);
  });
});
