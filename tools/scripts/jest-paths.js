// Maps the tsconfig path aliases (@gpufleet/*) to source for Jest.
const { compilerOptions } = require('../../tsconfig.base.json');

function pathsToModuleNameMapper() {
  const mapper = {};
  for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
    mapper[`^${alias.replace(/[/.*]/g, (c) => (c === '*' ? '(.*)' : `\\${c}`))}$`] = `<rootDir>/${target}`;
  }
  return mapper;
}

module.exports = { pathsToModuleNameMapper };
