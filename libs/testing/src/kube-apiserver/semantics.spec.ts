// The simulator's pure parts, without a socket: selectors, patches, field ownership, JSONPath.
import { serverSideApply } from './apply';
import { KubeApiError } from './errors';
import { applyJsonPatch, applyMergePatch, strategicMerge } from './patch';
import { fieldSelector, labelSelector } from './selectors';
import { evaluateJsonPath, humanDuration } from './tables';
import { KubeObject } from './types';

const pod = (labels: Record<string, string>, extra: Partial<KubeObject> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns', labels }, ...extra });

describe('label selectors', () => {
  it.each([
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app in (web,db)', true],
    ['app notin (web)', false],
    ['tier', false],
    ['!tier', true],
    ['app=web,!tier,env in (prod)', true],
    ['missing!=x', true],
  ])('%s', (selector, expected) => {
    expect(labelSelector(selector)(pod({ app: 'web', env: 'prod' }))).toBe(expected);
  });

  it('rejects what it cannot parse', () => {
    expect(() => labelSelector('app in web')).toThrow(KubeApiError);
  });
});

describe('field selectors', () => {
  const p = pod({}, { spec: { nodeName: 'n1' }, status: { phase: 'Running' } });
  it.each([
    ['metadata.name=p', true],
    ['metadata.namespace!=ns', false],
    ['spec.nodeName=n1,status.phase=Running', true],
    ['spec.nodeName=', false],
    ['status.podIP=', true],
  ])('%s', (selector, expected) => {
    expect(fieldSelector(selector)(p)).toBe(expected);
  });
});

describe('patches', () => {
  it('applies RFC 6902 operations, failing a test op with 422', () => {
    const doc = { a: [1, 2], b: { c: 1 } };
    expect(applyJsonPatch(doc, [{ op: 'add', path: '/a/-', value: 3 }, { op: 'remove', path: '/b/c' }, { op: 'copy', from: '/a/0', path: '/d' }])).toEqual({ a: [1, 2, 3], b: {}, d: 1 });
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/b/c', value: 2 }])).toThrow(expect.objectContaining({ code: 422 }));
    expect(doc).toEqual({ a: [1, 2], b: { c: 1 } });
  });

  it('merges per RFC 7386: null deletes, lists replace', () => {
    expect(applyMergePatch({ a: 1, b: { c: 1, d: 2 }, l: [1] }, { a: null, b: { c: 3 }, l: [2] })).toEqual({ b: { c: 3, d: 2 }, l: [2] });
  });

  it('merges keyed lists strategically and honours $patch: delete', () => {
    const spec = { containers: [{ name: 'a', image: 'a:1', env: [{ name: 'X', value: '1' }] }, { name: 'b', image: 'b:1' }], tolerations: [{ key: 't' }] };
    const out = strategicMerge(spec, {
      $setElementOrder: 'ignored',
      containers: [{ name: 'a', env: [{ name: 'Y', value: '2' }] }, { name: 'b', $patch: 'delete' }, { name: 'c', image: 'c:1' }],
      tolerations: [{ key: 'u' }],
    });
    expect(out).toEqual({
      $setElementOrder: 'ignored',
      containers: [{ name: 'a', image: 'a:1', env: [{ name: 'X', value: '1' }, { name: 'Y', value: '2' }] }, { name: 'c', image: 'c:1' }],
      tolerations: [{ key: 'u' }],
    });
  });
});

describe('server-side apply', () => {
  const req = (manager: string, force = false) => ({ manager, force, apiVersion: 'v1', include: 'all' as const, time: '2026-01-01T00:00:00Z', resource: { group: '', resource: 'configmaps' } });
  const cm = (data: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data });

  it('removes what a manager stops applying, keeps what another owns, and conflicts on a differing value', () => {
    let obj = serverSideApply(undefined, cm({ a: '1', b: '1' }), req('one'));
    obj = serverSideApply(obj, cm({ b: '1', c: '1' }), req('two'));
    obj = serverSideApply(obj, cm({}), req('one'));
    expect(obj['data']).toEqual({ b: '1', c: '1' });
    expect(() => serverSideApply(obj, cm({ c: '2' }), req('one'))).toThrow(/Apply failed with 1 conflict: conflict with "two" using v1: \.data\.c/);
    const forced = serverSideApply(obj, cm({ c: '2' }), req('one', true));
    expect(forced['data']).toEqual({ b: '1', c: '2' });
    expect(forced.metadata.managedFields?.map((m) => [m.manager, m.fieldsV1])).toEqual([
      ['one', { 'f:data': { 'f:c': {} } }],
      ['two', { 'f:data': { 'f:b': {} } }],
    ]);
  });

  it('owns keyed list items by their key', () => {
    const deploy = (image: string): KubeObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: { containers: [{ name: 'app', image }] } } } });
    const obj = serverSideApply(undefined, deploy('x:1'), req('one'));
    expect(obj.metadata.managedFields?.[0].fieldsV1).toEqual({
      'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:name': {}, 'f:image': {} } } } } },
    });
    expect(() => serverSideApply(obj, deploy('x:2'), req('two'))).toThrow(/\.spec\.template\.spec\.containers\[name="app"\]\.image/);
  });
});

describe('printer columns', () => {
  it('evaluates the JSONPath subset printer columns use', () => {
    const obj = { spec: { nodes: [{ name: 'a' }, { name: 'b' }] }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    expect(evaluateJsonPath(obj, '.spec.nodes[0].name')).toEqual(['a']);
    expect(evaluateJsonPath(obj, '{.spec.nodes[*].name}')).toEqual(['a', 'b']);
    expect(evaluateJsonPath(obj, '.status.conditions[?(@.type=="Ready")].status')).toEqual(['True']);
    expect(evaluateJsonPath(obj, '.spec.missing')).toEqual([]);
  });

  it.each([
    [45_000, '45s'],
    [330_000, '5m30s'],
    [3 * 3600_000, '3h'],
    [(2 * 24 + 5) * 3600_000, '2d5h'],
  ])('renders %d ms as %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});
