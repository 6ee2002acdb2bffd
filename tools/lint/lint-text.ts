// Lints source texts as if they were files of the workspace, with one ESLint instance and the
// workspace's eslint.config.mjs. Reads `[{ filePath, code }]` (paths relative to the repository
// root) as JSON on stdin, prints `[{ filePath, messages: [{ ruleId, message }] }]` on stdout.
//
//   echo '[{"filePath":"libs/scheduling-core/src/x.ts","code":"export * from \"@gpufleet/messaging\";"}]' |
//     node -r @swc-node/register tools/lint/lint-text.ts
//
// A process of its own because ESLint loads the .mjs config with a dynamic import(), which Jest's
// module sandbox refuses; module-boundaries.spec.ts runs it. The boundary rule needs a computed
// project graph (`npx nx show projects`); without one it reports nothing.
import { readFileSync } from 'fs';
import { join } from 'path';
import { ESLint } from 'eslint';

export interface LintProbe {
  filePath: string;
  code: string;
}

export interface LintProbeResult {
  filePath: string;
  messages: { ruleId: string | null; message: string }[];
}

async function main(): Promise<void> {
  const probes = JSON.parse(readFileSync(0, 'utf8')) as LintProbe[];
  const cwd = join(__dirname, '..', '..');
  const eslint = new ESLint({ cwd });
  const results: LintProbeResult[] = [];
  for (const probe of probes) {
    const [result] = await eslint.lintText(probe.code, { filePath: join(cwd, probe.filePath) });
    results.push({ filePath: probe.filePath, messages: result.messages.map((m) => ({ ruleId: m.ruleId, message: m.message })) });
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
