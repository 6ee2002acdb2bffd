import { promises as fs } from 'node:fs';
import { resolveAccelerators } from './accelerator-spec';
import { DEFAULT_VERSIONS } from './catalog';
import { childPath, FieldReader, FleetFileError, Issues } from './field-reader';
import type { Fleet, FleetNode } from './fleet-types';
import {
  DEFAULT_KERNEL,
  DEFAULT_LOCAL_STORAGE_GIB,
  DEFAULT_MEMORY_GIB,
  DEFAULT_OS,
  HOST_FIELDS,
  mergeHostSpecs,
  readHostSpec,
  resolveCpu,
  resolveNics,
  type HostSpec,
} from './host-spec';
import { expandNamePattern, fillNodePlaceholders, NODE_NAME } from './node-names';

const NODE_FIELDS = ['name', 'namePrefix', 'count', 'accelerators', ...HOST_FIELDS] as const;

function nodeNames(f: FieldReader): string[] {
  const name = f.string('name', 'a node name or a pattern such as "h100-{0..1}"');
  const prefix = f.string('namePrefix');
  const count = f.positiveInteger('count');
  if (name !== undefined && prefix !== undefined) {
    f.issues.add(f.at('namePrefix'), 'give name or namePrefix, not both');
    return [];
  }
  if (name === undefined && prefix === undefined) {
    if (!f.has('name') && !f.has('namePrefix')) {
      f.issues.expected(f.at('name'), 'a node name or a pattern such as "h100-{0..1}" (or namePrefix with count)', undefined);
    }
    return [];
  }
  if (prefix !== undefined) {
    if (count === undefined) {
      if (!f.has('count')) f.issues.expected(f.at('count'), 'a positive integer (how many nodes namePrefix names)', undefined);
      return [];
    }
    return Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  }
  const expanded = expandNamePattern(name!);
  if (typeof expanded === 'string') {
    f.issues.add(f.at('name'), expanded);
    return [];
  }
  if (count !== undefined && count !== expanded.length) {
    const what = expanded.length === 1 ? 'a name without a {a..b} range names one node' : `${JSON.stringify(name)} names ${expanded.length} nodes`;
    f.issues.add(f.at('count'), `expected ${expanded.length} (${what}), got ${count}`);
  }
  return expanded;
}

function buildNodes(raw: unknown[], defaults: HostSpec, issues: Issues): FleetNode[] {
  const nodes: FleetNode[] = [];
  const seen = new Map<string, string>();
  raw.forEach((entry, group) => {
    const path = childPath('nodes', group);
    const f = FieldReader.of(entry, path, issues, NODE_FIELDS);
    if (!f) return;
    const names = nodeNames(f);
    const host = mergeHostSpecs(defaults, readHostSpec(f));
    const accelerators = resolveAccelerators(f);
    const cpu = resolveCpu(host.cpu, f.at('cpu'), issues);
    const nics = resolveNics(host.nics, f.at('nics'), issues);
    const versions = accelerators ? DEFAULT_VERSIONS[accelerators.vendor] : undefined;
    const driverVersion = host.driverVersion ?? versions?.driver;
    const runtimeVersion = host.runtimeVersion ?? versions?.runtime;
    const totalMib = host.memoryMib ?? DEFAULT_MEMORY_GIB * 1024;

    names.forEach((name, ordinal) => {
      if (!NODE_NAME.test(name)) {
        issues.expected(f.at(f.has('name') ? 'name' : 'namePrefix'), 'node names of lower-case letters, digits and "-" (at most 63)', name);
        return;
      }
      const previous = seen.get(name);
      if (previous !== undefined) {
        issues.add(f.at(f.has('name') ? 'name' : 'namePrefix'), `node name ${JSON.stringify(name)} is already used by ${previous}`);
        return;
      }
      seen.set(name, path);
      const fill = (value: string | undefined) => (value === undefined ? '' : fillNodePlaceholders(value, name, ordinal));
      nodes.push({
        name,
        group,
        ordinal,
        cpu: { ...cpu },
        // A running node never has all its memory free; 3% is what the kernel and agents typically hold.
        memory: { totalMib, availableMib: Math.floor(totalMib * 0.97) },
        localStorageGib: host.localStorageGib ?? DEFAULT_LOCAL_STORAGE_GIB,
        os: host.os ?? DEFAULT_OS,
        kernel: host.kernel ?? DEFAULT_KERNEL,
        ...(driverVersion !== undefined ? { driverVersion } : {}),
        ...(runtimeVersion !== undefined ? { runtimeVersion } : {}),
        topology: {
          zone: fill(host.topology?.zone),
          rack: fill(host.topology?.rack),
          // One HGX baseboard is one NVLink domain unless the file groups boards (e.g. an NVL72 rack).
          nvlinkDomain: fill(host.topology?.nvlinkDomain ?? (accelerators?.interconnect === 'nvlink' ? '{name}' : undefined)),
        },
        labels: Object.fromEntries(Object.entries(host.labels ?? {}).map(([k, v]) => [k, fill(v)])),
        ...(accelerators ? { accelerators: structuredClone(accelerators) } : {}),
        ...(nics ? { nics: { ...nics, down: [...nics.down] } } : {}),
      });
    });
  });
  return nodes;
}

/**
 * YAML reads `9.0` as the number 9 and `12.10` as 12.1; fleet files mean such values as
 * written (compute capabilities, versions), so any number whose text would not survive is
 * kept as its source text.
 */
function parseYaml(text: string, source: string): unknown {
  // Loaded here, not at the top: only simulated nodes read fleet files, and every importer of
  // this library (the node runtime, the scheduler) would otherwise carry yaml's 280 KiB.
  const { parseDocument, visit } = require('yaml') as typeof import('yaml');
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new FleetFileError(
      doc.errors.map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(yaml)',
        message: e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, ''),
      })),
      source,
    );
  }
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'number' && node.source !== undefined && String(node.value) !== node.source) {
        node.value = node.source;
      }
    },
  });
  return doc.toJS({ maxAliasCount: 1000 });
}

/**
 * Parses and validates a fleet file. Throws FleetFileError listing every problem, each
 * naming its field path, e.g. `nodes[2].accelerators.count: expected a positive integer, got "eight"`.
 */
export function parseFleet(text: string, source = 'fleet file'): Fleet {
  const issues = new Issues();
  const root = FieldReader.of(parseYaml(text, source) ?? {}, '', issues, ['cluster', 'defaults', 'nodes']);
  if (!root) throw new FleetFileError([{ path: '(document)', message: issues.list[0].message }], source);

  root.required('cluster', 'a cluster name such as "dev"');
  const cluster = root.string('cluster', 'a cluster name such as "dev"');
  if (cluster !== undefined && !NODE_NAME.test(cluster)) {
    issues.expected('cluster', 'a cluster name of lower-case letters, digits and "-" (at most 63)', cluster);
  }
  const defaultsReader = root.mapping('defaults', HOST_FIELDS);
  const defaults = defaultsReader ? readHostSpec(defaultsReader) : {};
  root.required('nodes', 'a list of nodes');
  const rawNodes = root.list('nodes') ?? [];
  if (root.has('nodes') && Array.isArray(root.value('nodes')) && rawNodes.length === 0) {
    issues.expected('nodes', 'at least one node', rawNodes);
  }
  const nodes = buildNodes(rawNodes, defaults, issues);

  if (issues.list.length > 0) throw new FleetFileError(dedupe(issues.list), source);
  return { cluster: cluster!, nodes };
}

function dedupe<T extends { path: string; message: string }>(list: T[]): T[] {
  const seen = new Set<string>();
  return list.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export async function loadFleetFile(path: string): Promise<Fleet> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read fleet file ${path}: ${(error as Error).message}`);
  }
  return parseFleet(text, path);
}

