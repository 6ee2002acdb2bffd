/**
 * Just enough of the Kubernetes protobuf encoding to read what kubectl's typed clients send:
 * since client-go 1.32 they POST and PUT built-in kinds as `application/vnd.kubernetes.protobuf`
 * (`kubectl create configmap|secret|namespace|serviceaccount`). The body is the `k8s\0` magic and a
 * runtime.Unknown envelope around the object's own message. Only the kinds below are decoded; any
 * other kind, or a field number not in these tables, is refused with 415 rather than half-read.
 */
import { KubeApiError } from './errors';
import { JsonObject } from './types';

type FieldType = 'string' | 'bytes' | 'int' | 'bool' | 'time' | 'message' | 'map' | 'bytesMap';

interface Field {
  name: string;
  type: FieldType;
  repeated?: boolean;
  message?: Message;
}

type Message = Record<number, Field>;

const TIME: Message = { 1: { name: 'seconds', type: 'int' }, 2: { name: 'nanos', type: 'int' } };

const OWNER_REFERENCE: Message = {
  1: { name: 'kind', type: 'string' },
  3: { name: 'name', type: 'string' },
  4: { name: 'uid', type: 'string' },
  5: { name: 'apiVersion', type: 'string' },
  6: { name: 'controller', type: 'bool' },
  7: { name: 'blockOwnerDeletion', type: 'bool' },
};

// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto, ObjectMeta (managedFields, 17, is not read).
const OBJECT_META: Message = {
  1: { name: 'name', type: 'string' },
  2: { name: 'generateName', type: 'string' },
  3: { name: 'namespace', type: 'string' },
  4: { name: 'selfLink', type: 'string' },
  5: { name: 'uid', type: 'string' },
  6: { name: 'resourceVersion', type: 'string' },
  7: { name: 'generation', type: 'int' },
  8: { name: 'creationTimestamp', type: 'time' },
  9: { name: 'deletionTimestamp', type: 'time' },
  10: { name: 'deletionGracePeriodSeconds', type: 'int' },
  11: { name: 'labels', type: 'map' },
  12: { name: 'annotations', type: 'map' },
  13: { name: 'ownerReferences', type: 'message', repeated: true, message: OWNER_REFERENCE },
  14: { name: 'finalizers', type: 'string', repeated: true },
};

const LOCAL_OBJECT_REFERENCE: Message = { 1: { name: 'name', type: 'string' } };

// k8s.io/api/core/v1/generated.proto
const KINDS: Record<string, Message> = {
  // The body of a DELETE from client-go's typed clients (kubectl drain's pod deletions).
  DeleteOptions: {
    1: { name: 'gracePeriodSeconds', type: 'int' },
    2: { name: 'preconditions', type: 'message', message: { 1: { name: 'uid', type: 'string' }, 2: { name: 'resourceVersion', type: 'string' } } },
    3: { name: 'orphanDependents', type: 'bool' },
    4: { name: 'propagationPolicy', type: 'string' },
    5: { name: 'dryRun', type: 'string', repeated: true },
  },
  ConfigMap: {
    1: { name: 'metadata', type: 'message', message: OBJECT_META },
    2: { name: 'data', type: 'map' },
    3: { name: 'binaryData', type: 'bytesMap' },
    4: { name: 'immutable', type: 'bool' },
  },
  Secret: {
    1: { name: 'metadata', type: 'message', message: OBJECT_META },
    2: { name: 'data', type: 'bytesMap' },
    3: { name: 'type', type: 'string' },
    4: { name: 'stringData', type: 'map' },
    5: { name: 'immutable', type: 'bool' },
  },
  Namespace: {
    1: { name: 'metadata', type: 'message', message: OBJECT_META },
    2: { name: 'spec', type: 'message', message: { 1: { name: 'finalizers', type: 'string', repeated: true } } },
    3: { name: 'status', type: 'message', message: { 1: { name: 'phase', type: 'string' } } },
  },
  ServiceAccount: {
    1: { name: 'metadata', type: 'message', message: OBJECT_META },
    2: { name: 'secrets', type: 'message', repeated: true, message: { 2: { name: 'name', type: 'string' }, 1: { name: 'kind', type: 'string' }, 3: { name: 'namespace', type: 'string' } } },
    3: { name: 'imagePullSecrets', type: 'message', repeated: true, message: LOCAL_OBJECT_REFERENCE },
    4: { name: 'automountServiceAccountToken', type: 'bool' },
  },
};

const ENVELOPE: Message = {
  1: { name: 'typeMeta', type: 'message', message: { 1: { name: 'apiVersion', type: 'string' }, 2: { name: 'kind', type: 'string' } } },
  2: { name: 'raw', type: 'bytes' },
  3: { name: 'contentEncoding', type: 'string' },
  4: { name: 'contentType', type: 'string' },
};

const refuse = (why: string): KubeApiError =>
  new KubeApiError(415, 'UnsupportedMediaType', `the simulator reads protobuf only for ConfigMap, Secret, Namespace and ServiceAccount: ${why}; send JSON (for kubectl: apply -f, or create --dry-run=client -o yaml | kubectl apply -f -)`);

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw refuse('truncated varint');
      const byte = this.buf[this.pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  bytes(): Buffer {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw refuse('truncated field');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

}

/**
 * Go's encoder writes every non-pointer field, set or not (`selfLink: ""`, a zero creationTimestamp);
 * as in Go, a zero value reads as absent.
 */
function isEmpty(value: unknown): boolean {
  if (value === '' || value === 0) return true;
  if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) return Object.keys(value).length === 0;
  return false;
}

function decode(buf: Buffer, message: Message, where: string): JsonObject {
  const out: JsonObject = {};
  const r = new Reader(buf);
  while (!r.done) {
    const key = Number(r.varint());
    const [num, wireType] = [key >> 3, key & 7];
    const field = message[num];
    if (!field) throw refuse(`field ${num} of ${where} is not in the simulator's table`);
    if (wireType !== (field.type === 'int' || field.type === 'bool' ? 0 : 2)) throw refuse(`field ${num} of ${where} has wire type ${wireType}`);
    let value: unknown;
    switch (field.type) {
      case 'string':
        value = r.bytes().toString('utf8');
        break;
      case 'bytes':
        value = r.bytes();
        break;
      case 'int':
        value = Number(BigInt.asIntN(64, r.varint()));
        break;
      case 'bool':
        value = r.varint() !== 0n;
        break;
      case 'time': {
        const t = decode(r.bytes(), TIME, `${where}.${field.name}`);
        if (!t['seconds']) continue;
        value = new Date(Number(t['seconds'] ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        break;
      }
      case 'message':
        value = decode(r.bytes(), field.message ?? {}, `${where}.${field.name}`);
        break;
      case 'map':
      case 'bytesMap': {
        const entry = decode(r.bytes(), { 1: { name: 'k', type: 'string' }, 2: { name: 'v', type: 'bytes' } }, `${where}.${field.name}`);
        const v = (entry['v'] as Buffer | undefined) ?? Buffer.alloc(0);
        const map = (out[field.name] ?? {}) as Record<string, string>;
        map[String(entry['k'] ?? '')] = field.type === 'map' ? v.toString('utf8') : v.toString('base64');
        out[field.name] = map;
        continue;
      }
    }
    if (field.repeated) out[field.name] = [...((out[field.name] as unknown[] | undefined) ?? []), value];
    else if (!isEmpty(value)) out[field.name] = value;
  }
  return out;
}

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';

export function decodeProtobufObject(body: Buffer): JsonObject {
  if (body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw refuse('the body lacks the k8s protobuf magic');
  const envelope = decode(body.subarray(4), ENVELOPE, 'runtime.Unknown');
  const typeMeta = (envelope['typeMeta'] ?? {}) as { apiVersion?: string; kind?: string };
  const kind = typeMeta.kind ?? '';
  const message = KINDS[kind];
  if (!message || (typeMeta.apiVersion !== 'v1' && !(kind === 'DeleteOptions' && typeMeta.apiVersion === 'meta.k8s.io/v1'))) throw refuse(`kind ${typeMeta.apiVersion ?? ''} ${kind}`);
  return { apiVersion: 'v1', kind, ...decode((envelope['raw'] as Buffer | undefined) ?? Buffer.alloc(0), message, kind) };
}
