// One Jest run for the whole workspace, split into tiers (CONVENTIONS #12):
//   unit         *.spec.ts            pure logic, no network
//   integration  *.int.spec.ts        real nats-server / redis-server from @gpufleet/testing
//   e2e          e2e/**/*.e2e.spec.ts real service processes
const { pathsToModuleNameMapper } = require('./tools/scripts/jest-paths');

const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

// @kubernetes/client-node 1.x and what it loads are ESM-only: Jest transforms them to CommonJS.
const esmOnly = ['@kubernetes/client-node', 'openid-client', 'oauth4webapi', 'jose'];

const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc, '^.+\\.m?js$': ['@swc/jest', { ...swc[1], jsc: { ...swc[1].jsc, parser: { syntax: 'ecmascript' } } }] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  moduleNameMapper: pathsToModuleNameMapper(),
  setupFiles: ['reflect-metadata'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  testEnvironmentOptions: { globalsCleanup: 'off' },
};

module.exports = {
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/{apps,libs,tools}/**/*.spec.ts'],
      testPathIgnorePatterns: [...common.testPathIgnorePatterns, '\\.int\\.spec\\.ts$', '\\.e2e\\.spec\\.ts$'],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/{apps,libs}/**/*.int.spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/tools/jest/integration-timeout.js'],
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/e2e/**/*.e2e.spec.ts'],
      setupFilesAfterEnv: ['<rootDir>/tools/jest/e2e-timeout.js'],
    },
  ],
};
