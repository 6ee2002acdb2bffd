/**
 * A skeleton of `/openapi/v3`: no schemas, only one PATCH operation per kind declaring the
 * `fieldValidation` query parameter. kubectl reads exactly that to decide it may leave validation
 * to the server (`fieldValidation=Strict`); without it kubectl validates locally and, finding no
 * OpenAPI document, refuses to apply at all. With no schemas here kubectl computes client-side
 * apply patches from its compiled-in types (built-ins) or as merge patches (custom resources).
 */
import { createHash } from 'node:crypto';
import { groupVersion, KindTable, ResourceKind } from './kinds';

/** `api/v1` or `apis/<group>/<version>`: the keys of the v3 root document. */
export const openApiPathOf = (k: Pick<ResourceKind, 'group' | 'version'>): string => (k.group ? `apis/${k.group}/${k.version}` : `api/${k.version}`);

/** kubectl caches a document by its URL for good, so the hash must change whenever the content does. */
export function openApiRoot(kinds: KindTable): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const p of new Set(kinds.all().map(openApiPathOf))) {
    const hash = createHash('sha256').update(JSON.stringify(openApiGroupVersion(kinds, p))).digest('hex').slice(0, 32).toUpperCase();
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${hash}` };
  }
  return { paths };
}

const param = (name: string): object => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });

export function openApiGroupVersion(kinds: KindTable, path: string): object | undefined {
  const served = kinds.all().filter((k) => openApiPathOf(k) === path);
  if (served.length === 0) return undefined;
  const paths: Record<string, object> = {};
  for (const k of served) {
    const url = `/${path}/${k.namespaced ? 'namespaces/{namespace}/' : ''}${k.resource}/{name}`;
    paths[url] = {
      patch: {
        operationId: `patch${k.kind}`,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: k.group, version: k.version, kind: k.kind },
        parameters: [param('dryRun'), param('fieldManager'), param('fieldValidation'), param('force')],
        responses: { '200': { description: 'OK' } },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes (gpufleet simulator)', version: groupVersion(served[0]) }, paths, components: { schemas: {} } };
}
