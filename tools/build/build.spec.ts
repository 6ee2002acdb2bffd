import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { dirname, join } from 'path';
import { buildApp as build, REPO_ROOT } from '@gpufleet/process-kit';

function write(root: string, file: string, text: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

describe('build', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gpufleet-build-'));
    copyFileSync(join(REPO_ROOT, '.swcrc'), join(root, '.swcrc'));
    write(root, 'tsconfig.base.json', JSON.stringify({ compilerOptions: { paths: { '@gpufleet/foo': ['libs/foo/src/index.ts'] } } }));
    write(root, 'apps/x/src/main.ts', "import { Foo } from '@gpufleet/foo';\nimport type { Only } from './types';\nexport const only: Only | undefined = undefined;\nconsole.log(new Foo(1));\n");
    write(root, 'apps/x/src/types.ts', 'export interface Only { a: number }\n');
    write(root, 'apps/x/src/unused.ts', 'export const unused = 1;\n');
    write(root, 'libs/foo/src/index.ts', "export * from './foo';\n");
    write(root, 'libs/foo/src/foo.ts', 'const dec = (): ClassDecorator => () => undefined;\n@dec()\nexport class Foo { constructor(readonly n: number) {} }\n');
    write(root, 'proto/gpufleet/v1/a.proto', 'syntax = "proto3";\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("compiles the app's runtime imports into dist/ with aliases made relative, decorator metadata and the protos", async () => {
    const result = await build('x', { root });
    expect(result.compiled.sort()).toEqual(['apps/x/src/main.ts', 'libs/foo/src/foo.ts', 'libs/foo/src/index.ts']);
    const main = readFileSync(join(root, 'dist/apps/x/src/main.js'), 'utf8');
    expect(main).toContain('require("../../../libs/foo/src")');
    expect(main).not.toContain('@gpufleet/');
    expect(main).toContain('//# sourceMappingURL=main.js.map');
    expect(readFileSync(join(root, 'dist/libs/foo/src/foo.js'), 'utf8')).toContain('design:paramtypes');
    expect(JSON.parse(readFileSync(join(root, 'dist/apps/x/src/main.js.map'), 'utf8')).sources).toEqual(['../../../../apps/x/src/main.ts']);
    expect(existsSync(join(root, 'dist/apps/x/src/types.js'))).toBe(false);
    expect(existsSync(join(root, 'dist/apps/x/src/unused.js'))).toBe(false);
    expect(existsSync(join(root, 'dist/proto/gpufleet/v1/a.proto'))).toBe(true);
  });

  it('compiles only what is newer than its output', async () => {
    await build('x', { root });
    const again = await build('x', { root });
    expect(again).toMatchObject({ compiled: [], upToDate: 3, assetsCopied: 0 });
    const later = new Date(Date.now() + 10_000);
    utimesSync(join(root, 'libs/foo/src/foo.ts'), later, later);
    expect((await build('x', { root })).compiled).toEqual(['libs/foo/src/foo.ts']);
  });

  it('refuses an app without an entry point', async () => {
    await expect(build('nope', { root })).rejects.toThrow(/unknown app nope/);
  });
});
