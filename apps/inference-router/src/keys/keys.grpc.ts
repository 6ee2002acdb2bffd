import { status as GrpcStatus } from '@grpc/grpc-js';
import { ApiKeyRecord, type KeyServiceServer } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, requireAdmin, unary } from '@gpufleet/grpc-kit';
import { KvStore, RevisionConflictError } from '@gpufleet/messaging';
import { API_KEY_ID_LENGTH } from '@gpufleet/routing-core';
import { newKeyRecord, publicKey } from './key-records';
import type { KeyRegistry } from './key-registry';
import { usageQuery, type UsageReport } from './usage-report';

const KEY_ID = new RegExp(`^[a-z0-9]{${API_KEY_ID_LENGTH}}$`);
const CAS_ATTEMPTS = 8;

export interface KeysGrpcDeps {
  /** Resolves once the api-keys bucket is open. */
  readonly store: () => KvStore<ApiKeyRecord>;
  readonly registry: KeyRegistry;
  readonly adminToken: string | undefined;
  /** The usage counters in Redis, for GetUsage. */
  readonly usage: UsageReport;
  /** USAGE_RETENTION_DAYS: the most days GetUsage reports. */
  readonly retentionDays: number;
  readonly now?: () => Date;
}

function checkId(id: string): void {
  if (!KEY_ID.test(id)) throw invalidArgument('id', `a key id of ${API_KEY_ID_LENGTH} lower-case letters and digits (the part after gpufleet_)`, id);
}

/**
 * KeyService: any router replica creates, lists, reads and revokes keys in the api-keys bucket;
 * every replica's registry follows the bucket by watch. GetUsage reads the usage counters every
 * replica writes to Redis. Needs the admin token when GPUFLEET_ADMIN_TOKEN is set.
 */
export function keysGrpc(deps: KeysGrpcDeps): KeyServiceServer {
  const now = deps.now ?? (() => new Date());
  return {
    createKey: unary(async (request, call) => {
      requireAdmin(call.metadata, deps.adminToken);
      const { record, fullKey } = newKeyRecord(request, now());
      const id = record.key?.id ?? '';
      const revision = await deps.store().create(id, record);
      // This replica knows the key at once; the others within the watch's latency.
      deps.registry.apply({ kind: 'put', key: id, value: record, revision });
      return { key: publicKey(record), fullKey };
    }),

    getKey: unary(async (request, call) => {
      requireAdmin(call.metadata, deps.adminToken);
      checkId(request.id);
      const found = await deps.store().get(request.id);
      if (!found) throw notFound('API key', request.id, 'list them with ListKeys');
      return { key: publicKey(found.value) };
    }),

    listKeys: unary(async (request, call) => {
      requireAdmin(call.metadata, deps.adminToken);
      const all = await deps.store().list();
      const keys = all.map((v) => publicKey(v.value)).filter((k) => request.includeRevoked || !k.revoked);
      keys.sort((a, b) => (a.createdAt?.getTime() ?? 0) - (b.createdAt?.getTime() ?? 0) || a.id.localeCompare(b.id));
      return { keys };
    }),

    revokeKey: unary(async (request, call) => {
      requireAdmin(call.metadata, deps.adminToken);
      checkId(request.id);
      const store = deps.store();
      for (let attempt = 0; ; attempt++) {
        const current = await store.get(request.id);
        if (!current) throw notFound('API key', request.id, 'list them with ListKeys');
        const key = publicKey(current.value);
        if (key.revoked) return { key };
        const next: ApiKeyRecord = { ...current.value, key: { ...key, revoked: true, revokedAt: now() } };
        try {
          const revision = await store.update(request.id, next, current.revision);
          deps.registry.apply({ kind: 'put', key: request.id, value: next, revision });
          return { key: publicKey(next) };
        } catch (err) {
          if (!(err instanceof RevisionConflictError)) throw err;
          if (attempt >= CAS_ATTEMPTS) throw new GrpcError(GrpcStatus.ABORTED, 'ABORTED', `API key ${request.id} kept changing while being revoked; retry`);
        }
      }
    }),

    getUsage: unary(async (request, call) => {
      requireAdmin(call.metadata, deps.adminToken);
      return { rows: await deps.usage.rows(usageQuery(request, deps.retentionDays), now()) };
    }),
  };
}
