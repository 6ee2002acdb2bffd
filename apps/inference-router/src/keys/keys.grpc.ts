import { Inject, Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type Redis from 'ioredis';
import type { KeyServiceServer } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, unary } from '@gpufleet/grpc-kit';
import { RevisionConflictError } from '@gpufleet/messaging';
import { API_KEY_ID_LENGTH } from '@gpufleet/routing-core';
import { ROUTER_CONFIG, type RouterConfig } from '../config';
import { REDIS } from '../redis';
import { RouterRuntime } from '../router.runtime';
import { newKeyRecord, publicKey } from './key-records';
import { usageQuery, UsageReport } from './usage-report';

const KEY_ID = new RegExp(`^[a-z0-9]{${API_KEY_ID_LENGTH}}$`);

function checkId(id: string): void {
  if (!KEY_ID.test(id)) throw invalidArgument('id', `a key id of ${API_KEY_ID_LENGTH} lower-case letters and digits (the part after gpufleet_)`, id);
}

/**
 * KeyService: any router replica creates, lists, reads and revokes keys in the api-keys bucket;
 * every replica's registry follows the bucket by watch. GetUsage reads the usage counters every
 * replica writes to Redis. Every method needs the admin role (KEY_RULES, wired in grpc.server.ts).
 */
@Injectable()
export class KeysGrpc {
  private readonly usage: UsageReport;

  constructor(
    @Inject(ROUTER_CONFIG) private readonly config: RouterConfig,
    private readonly runtime: RouterRuntime,
    @Inject(REDIS) redis: Redis,
  ) {
    this.usage = new UsageReport(redis, config.GPUFLEET_CLUSTER);
  }

  readonly implementation: KeyServiceServer = {
    createKey: unary(async (request) => {
      const { record, fullKey } = newKeyRecord(request, new Date());
      const id = record.key?.id ?? '';
      const revision = await this.runtime.apiKeys.create(id, record);
      // This replica knows the key at once; the others within the watch's latency.
      this.runtime.keys.apply({ kind: 'put', key: id, value: record, revision });
      return { key: publicKey(record), fullKey };
    }),

    getKey: unary(async (request) => {
      checkId(request.id);
      const found = await this.runtime.apiKeys.get(request.id);
      if (!found) throw notFound('API key', request.id, 'list them with ListKeys');
      return { key: publicKey(found.value) };
    }),

    listKeys: unary(async (request) => {
      const all = await this.runtime.apiKeys.list();
      const keys = all.map((v) => publicKey(v.value)).filter((k) => request.includeRevoked || !k.revoked);
      keys.sort((a, b) => (a.createdAt?.getTime() ?? 0) - (b.createdAt?.getTime() ?? 0) || a.id.localeCompare(b.id));
      return { keys };
    }),

    revokeKey: unary(async (request) => {
      checkId(request.id);
      const store = this.runtime.apiKeys;
      const written = await store
        .modify(request.id, (current) => {
          if (!current) throw notFound('API key', request.id, 'list them with ListKeys');
          const key = publicKey(current.value);
          return key.revoked ? undefined : { ...current.value, key: { ...key, revoked: true, revokedAt: new Date() } };
        })
        .catch((err: unknown) => {
          if (err instanceof RevisionConflictError) throw new GrpcError(GrpcStatus.ABORTED, 'ABORTED', `API key ${request.id} kept changing while being revoked; retry`);
          throw err;
        });
      if (!written) throw notFound('API key', request.id, 'list them with ListKeys');
      // This replica stops accepting the key at once; the others within the watch's latency.
      this.runtime.keys.apply({ kind: 'put', key: request.id, value: written.value, revision: written.revision });
      return { key: publicKey(written.value) };
    }),

    getUsage: unary(async (request) => {
      return { rows: await this.usage.rows(usageQuery(request, this.config.USAGE_RETENTION_DAYS), new Date()) };
    }),
  };
}
