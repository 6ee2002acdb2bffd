import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildApp, REPO_ROOT } from '@gpufleet/process-kit';
import { exportedNames, generatedModules } from './contracts-index';

const GENERATED = join(REPO_ROOT, 'libs/contracts/src/generated');

describe('contracts index', () => {
  it('re-exports values (a message is an interface and a const) and types by name', () => {
    const source = [
      'export interface Pod { name: string }',
      'export const Pod = { fromJSON() {} };',
      'export enum PodPhase { RUNNING = "RUNNING" }',
      'export function podPhaseToJSON() {}',
      'export type PodServiceService = typeof PodServiceService;',
      'export const PodServiceService = {};',
      'export interface PodServiceServer {}',
      'interface Hidden {}',
    ].join('\n');
    expect(exportedNames(source)).toEqual({ values: ['Pod', 'PodPhase', 'PodServiceService', 'podPhaseToJSON'], types: ['PodServiceServer'] });
  });

  it('has every generated file in the build\'s lazy list (.swcrc module.lazy)', () => {
    const swcrc = JSON.parse(readFileSync(join(REPO_ROOT, '.swcrc'), 'utf8')) as { module: { lazy: string[] } };
    // A new .proto file: add './gpufleet/v1/<name>' (or './k8s/…/api') to module.lazy in .swcrc.
    // The list also holds the apps' optional Kubernetes modules (./kubernetes/…, ./device-plugin/…,
    // ./nfd/…), loaded only when switched on.
    const generatedOnly = swcrc.module.lazy.filter((m) => m.startsWith('./gpufleet/') || m.startsWith('./k8s/'));
    expect(generatedOnly.sort()).toEqual(generatedModules(GENERATED));
  });

  it('builds into getters that load a generated file on its first use', async () => {
    const root = mkdtempSync(join(tmpdir(), 'gpufleet-contracts-lazy-'));
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };
    try {
      copyFileSync(join(REPO_ROOT, '.swcrc'), join(root, '.swcrc'));
      write('tsconfig.base.json', JSON.stringify({ compilerOptions: { paths: { '@gpufleet/c': ['libs/c/src/index.ts'] } } }));
      write('libs/c/src/index.ts', "export * from './generated';\n");
      write('libs/c/src/generated/index.ts', "export { Pod } from './gpufleet/v1/runtime';\n");
      write('libs/c/src/generated/gpufleet/v1/runtime.ts', "console.log('runtime.ts loaded');\nexport const Pod = { name: 'pod' };\n");
      write('proto/gpufleet/v1/runtime.proto', 'syntax = "proto3";\n');
      write('apps/x/src/main.ts', "import { Pod } from '@gpufleet/c';\nconsole.log('main started');\nconsole.log(Pod.name);\n");
      await buildApp('x', { root });
      const out = execFileSync(process.execPath, [join(root, 'dist/apps/x/src/main.js')], { encoding: 'utf8' });
      expect(out.trim().split('\n')).toEqual(['main started', 'runtime.ts loaded', 'pod']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
