// The module-boundary rule of eslint.config.mjs constrains: each probe is a one-line file
// linted as if it lived at its path, against the real project graph and tags.
import { execFileSync } from 'child_process';
import { join } from 'path';
import type { LintProbe, LintProbeResult } from './lint-text';

const REPO_ROOT = join(__dirname, '..', '..');
const BOUNDARIES = '@nx/enforce-module-boundaries';

interface Case extends LintProbe {
  what: string;
  /** The one message expected; none: the file lints clean. */
  error?: { ruleId: string; message: string };
}

/** What Nx reports for an import the importer's tag does not allow. */
function onlyTags(sourceTag: string, ...tags: string[]): Case['error'] {
  return { ruleId: BOUNDARIES, message: `A project tagged with "${sourceTag}" can only depend on libs tagged with ${tags.map((t) => `"${t}"`).join(', ')}` };
}

/** What Nx reports for a relative or `apps/…`/`libs/…` import of another project's file. */
const ACROSS_PROJECTS = { ruleId: BOUNDARIES, message: 'Projects cannot be imported by a relative or absolute path, and must begin with a npm scope' };

const probe = (what: string, filePath: string, code: string, error?: Case['error']): Case => ({ what, filePath, code, error });

const forbidden: Case[] = [
  probe('a domain lib imports an infrastructure lib', 'libs/scheduling-core/src/__lint_probe__.ts', "export * from '@gpufleet/messaging';", onlyTags('type:domain', 'type:domain', 'type:contracts')),
  probe(
    'node-runtime-core imports process-runtime (the violation issue 10 found)',
    'libs/node-runtime-core/src/__lint_probe__.ts',
    "export { devicesEnv } from '@gpufleet/process-runtime';",
    onlyTags('type:domain', 'type:domain', 'type:contracts'),
  ),
  probe('an app imports another app by a relative path', 'apps/scheduler/src/__lint_probe__.ts', "export * from '../../inference-router/src/config';", ACROSS_PROJECTS),
  probe('an app imports another app by a baseUrl path', 'apps/scheduler/src/__lint_probe__.ts', "export * from 'apps/inference-router/src/config';", ACROSS_PROJECTS),
  probe('an infrastructure lib imports an app', 'libs/messaging/src/__lint_probe__.ts', "export * from '../../../apps/scheduler/src/config';", ACROSS_PROJECTS),
  probe("a benchmark imports a lib's __fixtures__", 'tools/bench/__lint_probe__.ts', "export * from '../../libs/scheduling-core/src/placement/__fixtures__/fleet';", ACROSS_PROJECTS),
  probe("a benchmark lives in a lib's src", 'libs/routing-core/src/__lint_probe__.bench.ts', "export * from './prefix-tree';", {
    ruleId: 'no-restricted-syntax',
    message: 'Benchmarks live in tools/bench/<name>.bench.ts (npm run bench -- <name>) and import libs by their public entry points.',
  }),
  probe(
    'production code of a lib imports the test harness',
    'libs/messaging/src/__lint_probe__.ts',
    "export * from '@gpufleet/testing';",
    onlyTags('type:infra', 'type:infra', 'type:domain', 'type:contracts'),
  ),
  probe(
    'an app imports a lib scoped to another service',
    'apps/inference-router/src/__lint_probe__.ts',
    "export * from '@gpufleet/engine-sim-core';",
    onlyTags('scope:inference-router', 'scope:inference-router', 'scope:shared'),
  ),
  probe('a shared lib imports a lib scoped to one service', 'libs/routing-core/src/__lint_probe__.ts', "export * from '@gpufleet/engine-sim-core';", onlyTags('scope:shared', 'scope:shared')),
  probe('contracts import anything of the workspace', 'libs/contracts/src/__lint_probe__.ts', "export * from '@gpufleet/config';", {
    ruleId: BOUNDARIES,
    message: 'A project tagged with "type:contracts" cannot depend on any libs with tags',
  }),
];

const allowed: Case[] = [
  probe('an app imports domain and infrastructure libs', 'apps/scheduler/src/__lint_probe__.ts', "export * from '@gpufleet/scheduling-core';\nexport * from '@gpufleet/messaging';"),
  probe('an infrastructure lib imports a domain lib', 'libs/process-runtime/src/__lint_probe__.ts', "export * from '@gpufleet/process-spec';"),
  probe('a domain lib imports domain libs and contracts', 'libs/node-runtime-core/src/__lint_probe__.ts', "export * from '@gpufleet/process-spec';\nexport * from '@gpufleet/contracts';"),
  probe('a service imports a lib of its own scope', 'apps/engine-sim/src/__lint_probe__.ts', "export * from '@gpufleet/engine-sim-core';"),
  probe('a spec of a lib uses the test harness', 'libs/messaging/src/__lint_probe__.spec.ts', "export * from '@gpufleet/testing';"),
  probe('a benchmark imports public entry points', 'tools/bench/__lint_probe__.ts', "export * from '@gpufleet/testing';\nexport * from '@gpufleet/engine-sim-core';"),
];

let results: LintProbeResult[];

beforeAll(() => {
  // The boundary rule reads the cached project graph and silently checks nothing without one.
  execFileSync('npx', ['nx', 'show', 'projects'], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const probes: LintProbe[] = [...forbidden, ...allowed].map(({ filePath, code }) => ({ filePath, code }));
  const output = execFileSync(process.execPath, ['-r', '@swc-node/register', join(__dirname, 'lint-text.ts')], {
    cwd: REPO_ROOT,
    input: JSON.stringify(probes),
    encoding: 'utf8',
  });
  results = JSON.parse(output) as LintProbeResult[];
}, 120_000);

function messagesOf(index: number): LintProbeResult['messages'] {
  return results[index].messages;
}

describe('module boundaries', () => {
  it.each(forbidden.map((c, i) => [c.what, c, i] as const))('fail lint when %s', (_what, c, i) => {
    expect(results[i].filePath).toBe(c.filePath);
    expect(messagesOf(i)).toEqual([c.error]);
  });

  it.each(allowed.map((c, i) => [c.what, c, forbidden.length + i] as const))('pass lint when %s', (_what, c, i) => {
    expect(results[i].filePath).toBe(c.filePath);
    expect(messagesOf(i)).toEqual([]);
  });
});
