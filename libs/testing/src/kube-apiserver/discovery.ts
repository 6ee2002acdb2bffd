/**
 * Legacy discovery documents. kubectl asks first for the aggregated form
 * (`as=APIGroupDiscoveryList`); answered with plain `application/json`, client-go falls back to
 * these per-group documents, so the aggregated form is not served.
 */
import { groupVersion, KindTable, ResourceKind, VERBS } from './kinds';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-gpufleet-sim',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.23.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export function apiVersions(serverAddress: string): object {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function group(name: string, versions: string[]): object {
  const gvs = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: gvs, preferredVersion: gvs[0] };
}

export function apiGroupList(kinds: KindTable): object {
  const groups = [...kinds.groups()].filter(([name]) => name !== '').map(([name, versions]) => group(name, versions));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroup(kinds: KindTable, name: string): object | undefined {
  const versions = kinds.groups().get(name);
  return versions && name ? { kind: 'APIGroup', apiVersion: 'v1', ...group(name, versions) } : undefined;
}

function resourceEntries(k: ResourceKind): object[] {
  const entries: object[] = [
    {
      name: k.resource,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: VERBS,
      ...(k.shortNames?.length ? { shortNames: k.shortNames } : {}),
      ...(k.categories?.length ? { categories: k.categories } : {}),
    },
  ];
  if (k.statusSubresource) entries.push({ name: `${k.resource}/status`, singularName: '', namespaced: k.namespaced, kind: k.kind, verbs: ['get', 'patch', 'update'] });
  if (k.scale) entries.push({ name: `${k.resource}/scale`, singularName: '', namespaced: k.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] });
  if (k.group === '' && k.resource === 'pods') entries.push({ name: 'pods/binding', singularName: '', namespaced: true, kind: 'Binding', verbs: ['create'] });
  return entries;
}

export function apiResourceList(kinds: KindTable, groupName: string, version: string): object | undefined {
  const served = kinds.all().filter((k) => k.group === groupName && k.version === version);
  if (served.length === 0) return undefined;
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion({ group: groupName, version }), resources: served.flatMap(resourceEntries) };
}
