// The CustomResourceDefinitions of charts/gpufleet/crds, checked without an API server (no helm
// or kube-apiserver runs here): the structural-schema rules the API server enforces on
// apiextensions.k8s.io/v1, printer columns that point at schema fields, and field names that
// agree with the proto messages they mirror (docs/kubernetes.md#custom-resources). CEL rules
// (x-kubernetes-validations) are not evaluated here; a real API server compiles them on apply.
import { readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { loadSync } from '@grpc/proto-loader';
import { parse, parseAllDocuments } from 'yaml';
import { PRINTER_COLUMNS } from '@gpufleet/kube-runtime-core';
import { REPO_ROOT } from '@gpufleet/process-kit';
import { GPUInstanceSpec, GPUInstanceStatus, InstancePhase, InstanceType, ModelDeploymentSpec, ModelDeploymentStatus, DeploymentPhase } from '@gpufleet/contracts';

/** The subset of OpenAPI v3 a CRD schema uses. */
interface Schema {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema | Schema[];
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  pattern?: string;
  [keyword: string]: unknown;
}

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
}

interface Crd {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] };
    versions: { name: string; served: boolean; storage: boolean; subresources?: { status?: object; scale?: object }; additionalPrinterColumns?: PrinterColumn[]; schema: { openAPIV3Schema: Schema } }[];
  };
}

const CRD_DIR = join(REPO_ROOT, 'charts/gpufleet/crds');
const files = readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml')).sort();
const crds = new Map<string, Crd>(files.map((f) => [f, parse(readFileSync(join(CRD_DIR, f), 'utf8')) as Crd]));

function crdOf(kind: string): Crd {
  const crd = [...crds.values()].find((c) => c.spec.names.kind === kind);
  if (!crd) throw new Error(`no CRD of kind ${kind} in ${CRD_DIR}`);
  return crd;
}

function rootSchema(crd: Crd): Schema {
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

/** Every (path, schema) pair under `schema`, depth first. */
function walk(schema: Schema, path = ''): [string, Schema][] {
  const out: [string, Schema][] = [[path || '.', schema]];
  for (const [name, child] of Object.entries(schema.properties ?? {})) out.push(...walk(child, `${path}.${name}`));
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') out.push(...walk(schema.additionalProperties, `${path}.*`));
  if (schema.items && !Array.isArray(schema.items)) out.push(...walk(schema.items, `${path}[]`));
  return out;
}

/** Keywords apiextensions.k8s.io/v1 refuses in a structural schema (or allows only in another form). */
const FORBIDDEN = ['$ref', 'definitions', 'dependencies', 'patternProperties', 'additionalItems', 'id', '$schema'];

/** What the API server would refuse in one node of a structural schema, as sentences. */
function structuralProblems(path: string, s: Schema): string[] {
  const problems: string[] = [];
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  if (!s.type && !intOrString) problems.push(`${path}: has no type`);
  if (s.properties && s.additionalProperties !== undefined) problems.push(`${path}: properties and additionalProperties together`);
  if (s.additionalProperties === false) problems.push(`${path}: additionalProperties false (unknown fields are pruned anyway)`);
  if (s.type === 'object' && !s.properties && s.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true && path !== '.metadata') {
    problems.push(`${path}: an object without properties or additionalProperties needs x-kubernetes-preserve-unknown-fields (or everything in it is pruned)`);
  }
  if (s.type === 'array' && (!s.items || Array.isArray(s.items))) problems.push(`${path}: an array needs one items schema`);
  if (s.uniqueItems === true) problems.push(`${path}: uniqueItems true is not allowed (use x-kubernetes-list-type: set)`);
  for (const keyword of FORBIDDEN) if (keyword in s) problems.push(`${path}: ${keyword} is not allowed`);
  for (const value of s.enum ?? []) {
    const ok = (s.type === 'string' && typeof value === 'string') || (s.type === 'integer' && Number.isInteger(value)) || (s.type === 'boolean' && typeof value === 'boolean');
    if (!ok) problems.push(`${path}: enum value ${JSON.stringify(value)} is not a ${s.type}`);
  }
  if (s.pattern !== undefined) {
    try {
      new RegExp(s.pattern, 'u');
    } catch (err) {
      problems.push(`${path}: pattern ${s.pattern} is no ECMA-262 regular expression: ${(err as Error).message}`);
    }
  }
  if (s['x-kubernetes-list-type'] === 'map') {
    const item = s.items as Schema | undefined;
    for (const key of (s['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []) {
      if (!item?.required?.includes(key)) problems.push(`${path}: list-map key ${key} must be required in the items`);
    }
  }
  for (const name of s.required ?? []) if (!s.properties?.[name]) problems.push(`${path}: required ${name} is not a property`);
  return problems;
}

/**
 * The schema a printer column's JSONPath reaches, or a sentence saying where it stops.
 * Understands what the columns use: `.a.b`, `.a[0]`, `.a[*].b`; metadata is the API server's.
 */
function schemaAt(root: Schema, jsonPath: string): Schema | string {
  if (jsonPath === '.metadata.creationTimestamp') return { type: 'string', format: 'date-time' };
  let at: Schema = root;
  const steps = jsonPath.replace(/^\./, '').split('.');
  for (const step of steps) {
    const m = /^([A-Za-z0-9_-]+)((?:\[(?:\d+|\*)\])*)$/.exec(step);
    if (!m) return `cannot read step ${step}`;
    const next = at.properties?.[m[1]];
    if (!next) return `no field ${m[1]} under ${jsonPath.slice(0, jsonPath.indexOf(step))}`;
    at = next;
    for (let i = 0; i < (m[2].match(/\[/g) ?? []).length; i++) {
      if (at.type !== 'array' || !at.items || Array.isArray(at.items)) return `${m[1]} is not an array`;
      at = at.items;
    }
  }
  return at;
}

/** Column types the API server knows, and the schema types each can show. */
const COLUMN_TYPES: Record<string, string[]> = { integer: ['integer'], number: ['integer', 'number'], string: ['string', 'integer', 'number', 'boolean'], boolean: ['boolean'], date: ['string'] };

describe('every CRD in charts/gpufleet/crds', () => {
  it('lists the printer columns of kube-runtime-core (what the code and the docs show)', () => {
    for (const kind of ['ModelDeployment', 'GPUInstance', 'InstanceType'] as const) {
      const columns = (crdOf(kind).spec.versions[0].additionalPrinterColumns ?? []).map((c) => ({ name: c.name, type: c.type, jsonPath: c.jsonPath, priority: c.priority ?? 0 }));
      expect([kind, columns]).toEqual([kind, PRINTER_COLUMNS[kind].map((c) => ({ name: c.name, type: c.type, jsonPath: c.jsonPath, priority: 'priority' in c ? c.priority : 0 }))]);
    }
  });

  it('is there: ModelDeployment, GPUInstance, InstanceType', () => {
    expect([...crds.values()].map((c) => c.spec.names.kind).sort()).toEqual(['GPUInstance', 'InstanceType', 'ModelDeployment']);
  });

  it.each(files)('%s: is named <plural>.<group>, in group gpufleet.io, one version v1 served and stored, with a status subresource', (file) => {
    const crd = crds.get(file)!;
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(crd.kind).toBe('CustomResourceDefinition');
    expect(crd.spec.group).toBe('gpufleet.io');
    expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.${crd.spec.group}`);
    expect(file).toBe(`${crd.metadata.name.split('.').slice(1).join('.')}_${crd.spec.names.plural}.yaml`);
    expect(crd.spec.names.singular).toBe(crd.spec.names.kind.toLowerCase());
    expect(crd.spec.names.plural).toBe(`${crd.spec.names.singular}s`);
    expect(crd.spec.names.listKind).toBe(`${crd.spec.names.kind}List`);
    expect(crd.spec.names.categories).toEqual(['gpufleet']);
    expect(crd.spec.names.shortNames?.length).toBeGreaterThan(0);
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1', true, true]]);
    expect(crd.spec.versions[0].subresources?.status).toEqual({});
    // The status subresource is what keeps users from writing status (and the scheduler from
    // bumping metadata.generation when it writes status).
    expect(Object.keys(rootSchema(crd).properties ?? {}).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'spec', 'status']);
  });

  it('has the scopes and short names the docs give', () => {
    expect(['ModelDeployment', 'GPUInstance', 'InstanceType'].map((k) => [k, crdOf(k).spec.scope, crdOf(k).spec.names.shortNames])).toEqual([
      ['ModelDeployment', 'Namespaced', ['md']],
      ['GPUInstance', 'Namespaced', ['gi']],
      ['InstanceType', 'Cluster', ['it']],
    ]);
  });

  it.each(files)('%s: is a structural schema (every node typed, no properties beside additionalProperties, nothing the API server refuses)', (file) => {
    const problems = walk(rootSchema(crds.get(file)!)).flatMap(([path, s]) => structuralProblems(path, s));
    expect(problems).toEqual([]);
  });

  it.each(files)('%s: printer columns point at schema fields of a type they can show', (file) => {
    const crd = crds.get(file)!;
    const columns = crd.spec.versions[0].additionalPrinterColumns ?? [];
    const problems = columns.flatMap((c) => {
      const target = schemaAt(rootSchema(crd), c.jsonPath);
      if (typeof target === 'string') return [`${c.name} (${c.jsonPath}): ${target}`];
      const shows = COLUMN_TYPES[c.type];
      if (!shows) return [`${c.name}: unknown column type ${c.type}`];
      if (!shows.includes(target.type ?? '')) return [`${c.name}: a ${c.type} column over a ${target.type} field`];
      if (c.jsonPath.includes('[*]') && c.type !== 'string') return [`${c.name}: several values need a string column`];
      return [];
    });
    expect(problems).toEqual([]);
    expect(columns[columns.length - 1]).toMatchObject({ name: 'Age', type: 'date' });
    expect(new Set(columns.map((c) => c.name.toLowerCase())).size).toBe(columns.length);
  });

  it('InstanceType columns show live capacity from status, so `kubectl get it -w` follows it', () => {
    const columns = crdOf('InstanceType').spec.versions[0].additionalPrinterColumns ?? [];
    const shown = columns.filter((c) => !c.priority).map((c) => c.jsonPath);
    expect(shown).toEqual(expect.arrayContaining(['.status.capacity.whole.remaining', '.status.capacity.shared.remaining', '.status.capacity.sliced.memoryMib.remaining', '.status.readyNodes']));
  });
});

// ---------------------------------------------------------------- agreement with proto/

const PROTO_DIR = join(REPO_ROOT, 'proto');
const definitions = loadSync(['gpufleet/v1/deployments.proto', 'gpufleet/v1/instances.proto', 'gpufleet/v1/capacity.proto'], { includeDirs: [PROTO_DIR], keepCase: false });

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: MessageDescriptor[];
  options: { mapEntry?: boolean } | null;
}

function message(name: string): MessageDescriptor {
  const d = definitions[`gpufleet.v1.${name}`] as { format?: string; type?: MessageDescriptor } | undefined;
  if (!d?.type || d.format !== 'Protocol Buffer 3 DescriptorProto') throw new Error(`no message gpufleet.v1.${name}`);
  return d.type;
}

function enumValues(name: string): string[] {
  const d = definitions[`gpufleet.v1.${name}`] as { type: { value: { name: string }[] } };
  return d.type.value.map((v) => v.name);
}

const INTEGER_TYPES = ['TYPE_INT32', 'TYPE_UINT32', 'TYPE_INT64', 'TYPE_UINT64', 'TYPE_SINT32', 'TYPE_SINT64', 'TYPE_FIXED32', 'TYPE_FIXED64'];

/**
 * Where the CRD deliberately departs from proto3 JSON, by schema path: each is documented in
 * docs/kubernetes.md#custom-resources. `omit`: a proto field the object has elsewhere
 * (metadata); `replace`: a Kubernetes-convention field in place of the proto's.
 */
interface Departures {
  omit?: string[];
  /** path → what to check there instead of the proto message */
  replace?: Record<string, (s: Schema) => void>;
}

/** Problems where `schema` (at `path`) does not mirror proto message `msg`. */
function mirrorProblems(schema: Schema, msg: MessageDescriptor, path: string, departures: Departures): string[] {
  const problems: string[] = [];
  const props = schema.properties ?? {};
  const fields = new Map(msg.field.map((f) => [f.name, f]));
  for (const name of Object.keys(props)) {
    const at = `${path}.${name}`;
    if (departures.replace?.[at]) {
      departures.replace[at](props[name]);
      continue;
    }
    const field = fields.get(name);
    if (!field) {
      problems.push(`${at}: no field ${name} in ${msg.name} (fields: ${[...fields.keys()].join(', ')})`);
      continue;
    }
    problems.push(...fieldProblems(props[name], field, msg, at, departures));
  }
  for (const name of fields.keys()) {
    const at = `${path}.${name}`;
    if (!(name in props) && !departures.omit?.includes(at)) problems.push(`${at}: ${msg.name}.${name} is missing from the schema`);
  }
  return problems;
}

function fieldProblems(s: Schema, field: FieldDescriptor, parent: MessageDescriptor, at: string, departures: Departures): string[] {
  const entry = parent.nestedType.find((n) => n.name === field.typeName && n.options?.mapEntry);
  if (entry) {
    if (s.type !== 'object' || typeof s.additionalProperties !== 'object') return [`${at}: a map, expected an object with additionalProperties`];
    return fieldProblems(s.additionalProperties, entry.field[1], entry, `${at}.*`, departures);
  }
  if (field.label === 'LABEL_REPEATED') {
    if (s.type !== 'array' || !s.items || Array.isArray(s.items)) return [`${at}: repeated, expected an array`];
    return fieldProblems(s.items, { ...field, label: 'LABEL_OPTIONAL' }, parent, `${at}[]`, departures);
  }
  switch (field.type) {
    case 'TYPE_MESSAGE':
      if (s.type !== 'object') return [`${at}: message ${field.typeName}, expected an object`];
      return mirrorProblems(s, message(field.typeName), at, departures);
    case 'TYPE_STRING':
      return s.type === 'string' ? [] : [`${at}: string, got ${s.type}`];
    case 'TYPE_BOOL':
      return s.type === 'boolean' ? [] : [`${at}: bool, got ${s.type}`];
    case 'TYPE_DOUBLE':
    case 'TYPE_FLOAT':
      return s.type === 'number' ? [] : [`${at}: ${field.type}, got ${s.type}`];
    case 'TYPE_ENUM':
      return s.type === 'string' && s.enum ? [] : [`${at}: enum ${field.typeName}, expected a string with enum`];
    default:
      if (INTEGER_TYPES.includes(field.type)) {
        const problems = s.type === 'integer' ? [] : [`${at}: ${field.type}, got ${s.type}`];
        if (field.type.includes('UINT') && (s.minimum ?? -1) < 0) problems.push(`${at}: unsigned, expected minimum >= 0`);
        if (/64/.test(field.type) && s.format !== 'int64') problems.push(`${at}: 64-bit, expected format int64`);
        return problems;
      }
      return [`${at}: unhandled proto type ${field.type}`];
  }
}

/** DEPLOYMENT_PHASE_NOT_READY → NotReady: the proto enum value as the CRD writes it. */
function kubePhase(protoValue: string, prefix: string): string {
  return protoValue
    .slice(prefix.length)
    .split('_')
    .map((w) => w.charAt(0) + w.slice(1).toLowerCase())
    .join('');
}

function phaseValues(enumName: string, prefix: string): string[] {
  return enumValues(enumName).filter((v) => !v.endsWith('_UNSPECIFIED')).map((v) => kubePhase(v, prefix));
}

/** The metav1.Condition shape that replaces gpufleet.v1.Condition (kubectl wait --for=condition=…). */
function expectKubeConditions(s: Schema): void {
  expect(s['x-kubernetes-list-type']).toBe('map');
  const item = s.items as Schema;
  expect(Object.keys(item.properties ?? {}).sort()).toEqual(['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type']);
  expect(item.properties?.status.enum).toEqual(['True', 'False', 'Unknown']);
}

describe('the CRDs mirror the proto messages', () => {
  it('ModelDeployment: spec is ModelDeploymentSpec without name and namespace (metadata has them)', () => {
    const spec = rootSchema(crdOf('ModelDeployment')).properties!.spec;
    expect(mirrorProblems(spec, message('ModelDeploymentSpec'), '.spec', { omit: ['.spec.name', '.spec.namespace'] })).toEqual([]);
  });

  it('ModelDeployment: status is ModelDeploymentStatus, phase and conditions in Kubernetes form', () => {
    const status = rootSchema(crdOf('ModelDeployment')).properties!.status;
    const replace = {
      '.status.phase': (s: Schema) => expect(s.enum).toEqual(phaseValues('DeploymentPhase', 'DEPLOYMENT_PHASE_')),
      '.status.conditions': expectKubeConditions,
    };
    expect(mirrorProblems(status, message('ModelDeploymentStatus'), '.status', { replace })).toEqual([]);
  });

  it('GPUInstance: spec is GPUInstanceSpec without name and namespace', () => {
    const spec = rootSchema(crdOf('GPUInstance')).properties!.spec;
    expect(mirrorProblems(spec, message('GPUInstanceSpec'), '.spec', { omit: ['.spec.name', '.spec.namespace'] })).toEqual([]);
  });

  it('GPUInstance: status is GPUInstanceStatus with a Kubernetes phase, plus conditions and observedGeneration', () => {
    const status = rootSchema(crdOf('GPUInstance')).properties!.status;
    const replace = {
      '.status.phase': (s: Schema) => expect(s.enum).toEqual(phaseValues('InstancePhase', 'INSTANCE_PHASE_')),
      '.status.conditions': expectKubeConditions,
      '.status.observedGeneration': (s: Schema) => expect(s).toMatchObject({ type: 'integer', format: 'int64' }),
    };
    expect(mirrorProblems(status, message('GPUInstanceStatus'), '.status', { replace })).toEqual([]);
  });

  it('InstanceType: spec and status together are InstanceType without name; capacity is in status', () => {
    const root = rootSchema(crdOf('InstanceType'));
    const merged: Schema = { type: 'object', properties: { ...root.properties!.spec.properties, ...root.properties!.status.properties } };
    expect(mirrorProblems(merged, message('InstanceType'), '', { omit: ['.name'] })).toEqual([]);
    expect(Object.keys(root.properties!.status.properties!).sort()).toEqual(['capacity', 'readyNodes', 'revision']);
  });
});

// ---------------------------------------------------------------- objects through both

/** Problems where `value` does not conform to `schema`: what the API server would refuse or prune. */
function conformance(value: unknown, s: Schema, path = ''): string[] {
  const at = path || '.';
  if (s.type === 'object') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${at}: expected an object`];
    const obj = value as Record<string, unknown>;
    const problems = (s.required ?? []).filter((k) => !(k in obj)).map((k) => `${at}: ${k} is required`);
    if (s.maxProperties !== undefined && Object.keys(obj).length > s.maxProperties) problems.push(`${at}: more than ${s.maxProperties} properties`);
    for (const [k, v] of Object.entries(obj)) {
      const child = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      if (child) problems.push(...conformance(v, child, `${path}.${k}`));
      else if (s['x-kubernetes-preserve-unknown-fields'] !== true && !(path === '' || path === '.metadata')) problems.push(`${path}.${k}: unknown field (pruned)`);
    }
    return problems;
  }
  if (s.type === 'array') {
    if (!Array.isArray(value)) return [`${at}: expected an array`];
    const problems: string[] = [];
    if (s.minItems !== undefined && value.length < s.minItems) problems.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems) problems.push(`${at}: more than ${s.maxItems} items`);
    value.forEach((v, i) => problems.push(...conformance(v, s.items as Schema, `${path}[${i}]`)));
    return problems;
  }
  const problems: string[] = [];
  if (s.type === 'string') {
    if (typeof value !== 'string') return [`${at}: expected a string, got ${JSON.stringify(value)}`];
    if (s.minLength !== undefined && value.length < s.minLength) problems.push(`${at}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && value.length > s.maxLength) problems.push(`${at}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) problems.push(`${at}: does not match ${s.pattern}`);
  } else if (s.type === 'integer') {
    if (!Number.isInteger(value)) return [`${at}: expected an integer, got ${JSON.stringify(value)}`];
    if (s.minimum !== undefined && (value as number) < s.minimum) problems.push(`${at}: below ${s.minimum}`);
    if (s.maximum !== undefined && (value as number) > s.maximum) problems.push(`${at}: above ${s.maximum}`);
  } else if (s.type === 'boolean' && typeof value !== 'boolean') return [`${at}: expected a boolean`];
  if (s.enum && !s.enum.includes(value)) problems.push(`${at}: ${JSON.stringify(value)} is not one of ${s.enum.join(', ')}`);
  return problems;
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

function examples(file: string): KubeObject[] {
  return parseAllDocuments(readFileSync(join(REPO_ROOT, 'examples/kubernetes', file), 'utf8')).map((d) => d.toJS() as KubeObject);
}

/** The proto spec a CR stands for: its spec with metadata's name and namespace. */
function protoSpecJson(o: KubeObject): Record<string, unknown> {
  return { name: o.metadata.name, namespace: o.metadata.namespace, ...o.spec };
}

/** The CR status of a proto status: phase without its prefix, conditions as metav1.Condition. */
function kubeStatus(status: Record<string, unknown>, phasePrefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...status };
  if (typeof status.phase === 'string') out.phase = kubePhase(status.phase, phasePrefix);
  if (Array.isArray(status.conditions)) {
    out.conditions = (status.conditions as { type: string; status?: boolean; reason?: string; message?: string; lastTransition?: string }[]).map((c) => ({
      type: c.type,
      status: c.status ? 'True' : 'False',
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
      ...(c.lastTransition ? { lastTransitionTime: c.lastTransition } : {}),
    }));
  }
  return out;
}

describe('objects that go through the CRD schema and the generated proto code', () => {
  it.each(examples('modeldeployment.yaml').map((o) => [o.metadata.name, o] as const))('examples/kubernetes ModelDeployment %s: the API server takes it, and its spec round-trips through ModelDeploymentSpec', (_, o) => {
    expect(o).toMatchObject({ apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment' });
    expect(conformance(o, rootSchema(crdOf('ModelDeployment')))).toEqual([]);
    expect(ModelDeploymentSpec.toJSON(ModelDeploymentSpec.fromJSON(protoSpecJson(o)))).toEqual(protoSpecJson(o));
  });

  it.each(examples('gpuinstance.yaml').map((o) => [o.metadata.name, o] as const))('examples/kubernetes GPUInstance %s: the API server takes it, and its spec round-trips through GPUInstanceSpec', (_, o) => {
    expect(o).toMatchObject({ apiVersion: 'gpufleet.io/v1', kind: 'GPUInstance' });
    expect(conformance(o, rootSchema(crdOf('GPUInstance')))).toEqual([]);
    expect(GPUInstanceSpec.toJSON(GPUInstanceSpec.fromJSON(protoSpecJson(o)))).toEqual(protoSpecJson(o));
  });

  it('the schema refuses what the gRPC validators refuse where it can say it (an unknown engine, a model that reads as a flag, 257 replicas) and prunes unknown fields', () => {
    const schema = rootSchema(crdOf('ModelDeployment'));
    const bad = { apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment', metadata: { name: 'x' }, spec: { model: '-x', engine: { engine: 'tgi' }, roles: [{ replicas: 257, instanceType: 'a.1x' }], extra: 1 } };
    expect(conformance(bad, schema)).toEqual([
      '.spec.model: does not match ^([^-\\s]\\S*)?$',
      '.spec.engine.engine: "tgi" is not one of vllm, sglang, trtllm, llama-cpp, custom',
      '.spec.roles[0].replicas: above 256',
      '.spec.extra: unknown field (pruned)',
    ]);
  });

  it('a ModelDeploymentStatus the scheduler writes, in Kubernetes form, fits the status schema', () => {
    const status = ModelDeploymentStatus.toJSON(
      ModelDeploymentStatus.fromPartial({
        phase: DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED,
        desiredReplicas: 2,
        readyReplicas: 1,
        updatedReplicas: 2,
        replicas: [{ role: 'server', ordinal: 1, workload: 'llama-s1-bcdfg', state: 'Restarting', node: 'gpu-1', endpoint: 'http://10.0.0.7:8000', acceleratorIds: ['GPU-1'], restarts: 3, message: 'exited with code 1', updated: true, logsUrl: 'http://gpu-1:8088/v1/pods/x/logs' }],
        conditions: [{ type: 'Available', status: true, reason: 'ReplicaReady', message: '1 of 2 ready', lastTransition: new Date('2026-01-01T00:00:00Z') }],
        observedGeneration: 4,
        endpoints: ['http://10.0.0.6:8000'],
        templateHash: 'abc123',
      }),
    ) as Record<string, unknown>;
    const o = { apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment', metadata: { name: 'llama' }, spec: { model: '/m', roles: [{ instanceType: 'a.1x' }] }, status: kubeStatus(status, 'DEPLOYMENT_PHASE_') };
    expect(conformance(o, rootSchema(crdOf('ModelDeployment')))).toEqual([]);
    expect(o.status).toMatchObject({ phase: 'Degraded', conditions: [{ type: 'Available', status: 'True', lastTransitionTime: '2026-01-01T00:00:00.000Z' }] });
  });

  it('a GPUInstanceStatus in Kubernetes form fits the status schema', () => {
    const status = GPUInstanceStatus.toJSON(
      GPUInstanceStatus.fromPartial({ phase: InstancePhase.INSTANCE_PHASE_RUNNING, workload: 'dev-box-bcdfg', node: 'gpu-1', sshHost: '10.0.0.7', sshPort: 2222, sshUser: 'gpufleet-200123', sshHostKey: 'ssh-ed25519 AAAA', acceleratorIds: ['GPU-0'], devicesEnv: { CUDA_VISIBLE_DEVICES: '0' }, message: '', logsUrl: 'http://gpu-1:8088/logs' }),
    ) as Record<string, unknown>;
    const o = { apiVersion: 'gpufleet.io/v1', kind: 'GPUInstance', metadata: { name: 'dev-box' }, spec: { instanceType: 'a.1x', sshPublicKeys: ['ssh-ed25519 AAAA'] }, status: kubeStatus(status, 'INSTANCE_PHASE_') };
    expect(conformance(o, rootSchema(crdOf('GPUInstance')))).toEqual([]);
    expect(o.status.phase).toBe('Running');
  });

  it('an InstanceType with MIG partitions, split into spec and status as the scheduler mirrors it, fits the schema', () => {
    const it = InstanceType.toJSON(
      InstanceType.fromPartial({
        name: 'a100-sxm4-80gb-x86-64.1x',
        pool: 'a100-sxm4-80gb-x86-64',
        acceleratorProduct: 'NVIDIA A100-SXM4-80GB',
        unit: { accelerators: 1, vcpu: 28, memoryMib: 262144, localStorageGib: 3576, acceleratorMemoryMib: 81920 },
        creditPrice: 1_600_000,
        capacity: {
          whole: { onceMaxRequest: 8, remaining: 12, capacity: 16 },
          shared: { onceMaxRequest: 10, remaining: 120, capacity: 160 },
          sliced: { memoryMib: { onceMaxRequest: 81920, remaining: 983040, capacity: 1310720 }, coresPercent: { onceMaxRequest: 100, remaining: 1200, capacity: 1600 } },
          partitioned: [{ profile: '1g.10gb', view: { onceMaxRequest: 7, remaining: 14, capacity: 14 } }],
          cpu: { onceMaxRequest: 224, remaining: 400, capacity: 448 },
          memoryMib: { onceMaxRequest: 2097152, remaining: 3145728, capacity: 4194304 },
        },
        readyNodes: 2,
        revision: 9,
      }),
    ) as Record<string, unknown>;
    const { name, capacity, readyNodes, revision, ...spec } = it;
    const o = { apiVersion: 'gpufleet.io/v1', kind: 'InstanceType', metadata: { name }, spec, status: { capacity, readyNodes, revision } };
    expect(conformance(o, rootSchema(crdOf('InstanceType')))).toEqual([]);
  });
});
