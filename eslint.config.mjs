import { readdirSync, readFileSync } from 'node:fs';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Module boundaries (docs/development.md#module-boundaries). Every project has two tags:
//   type:  app | domain | infra | contracts | testing | e2e | tools   (what it may import)
//   scope: <service> | shared | e2e | tools                          (whose code it is)
// Nx applies every constraint whose sourceTag the importing project has, so both dimensions hold.

/** type:<layer> -> the layers it may import in production code. */
const LAYERS = {
  // Pure logic, testable without a network: only other pure logic and the contracts.
  'type:domain': ['type:domain', 'type:contracts'],
  // Adapters to NATS, gRPC, OpenTelemetry, processes, config: may use domain logic, never apps.
  'type:infra': ['type:infra', 'type:domain', 'type:contracts'],
  'type:app': ['type:domain', 'type:infra', 'type:contracts'],
  'type:contracts': [],
  'type:testing': ['type:infra', 'type:domain', 'type:contracts'],
  // e2e and tools start apps as processes; they import libs by their public entry points only.
  'type:e2e': ['type:domain', 'type:infra', 'type:contracts', 'type:testing'],
  'type:tools': ['type:domain', 'type:infra', 'type:contracts', 'type:testing'],
};

/** Layers whose specs and __fixtures__ may also use the test harness (production code may not). */
const SPECS_MAY_USE_TESTING = ['type:app', 'type:domain', 'type:infra'];

/** One scope per service: the scope:<service> tags of apps/<service>/project.json. */
const SERVICE_SCOPES = readdirSync(new URL('./apps/', import.meta.url)).flatMap((app) => {
  const project = JSON.parse(readFileSync(new URL(`./apps/${app}/project.json`, import.meta.url), 'utf8'));
  return project.tags.filter((tag) => tag.startsWith('scope:'));
});

// A service's code (its app and the libs only it uses) may import its own scope and shared libs;
// shared libs only shared libs; e2e and tools, which exercise every service, any scope.
const SCOPES = [
  { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
  ...SERVICE_SCOPES.map((scope) => ({ sourceTag: scope, onlyDependOnLibsWithTags: [scope, 'scope:shared'] })),
  ...['scope:e2e', 'scope:tools'].map((scope) => ({ sourceTag: scope, onlyDependOnLibsWithTags: [...SERVICE_SCOPES, 'scope:shared'] })),
];

function moduleBoundaries(withTesting) {
  const layers = Object.entries(LAYERS).map(([sourceTag, allowed]) => ({
    sourceTag,
    onlyDependOnLibsWithTags: withTesting.includes(sourceTag) ? [...allowed, 'type:testing'] : allowed,
  }));
  return ['error', { enforceBuildableLibDependency: false, allow: [], depConstraints: [...layers, ...SCOPES] }];
}

export default [
  { ignores: ['**/node_modules/**', '**/dist/**', '**/generated/**', '**/tmp/**', '**/*.js', '**/*.mjs', 'charts/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
      '@nx/enforce-module-boundaries': moduleBoundaries([]),
    },
  },
  {
    files: ['**/*.spec.ts', 'e2e/**/*.ts', 'tools/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // Specs may use the test harness (ephemeral nats-server/redis-server); production code may not.
    files: ['**/*.spec.ts', '**/__fixtures__/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': moduleBoundaries(SPECS_MAY_USE_TESTING) },
  },
  {
    files: ['apps/**/*.bench.ts', 'libs/**/*.bench.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Program',
          message: 'Benchmarks live in tools/bench/<name>.bench.ts (npm run bench -- <name>) and import libs by their public entry points.',
        },
      ],
    },
  },
];
