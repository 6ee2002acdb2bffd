import type { JetStreamClient } from 'nats';
import type { AccessDirectory } from '@gpufleet/access-core';
import { AccessTokenRecord, Buckets, RoleBinding, User } from '@gpufleet/contracts';
import type { Logger } from '@gpufleet/observability';
import { KvMirror } from './kv-mirror';
import { KvStore } from './kv-store';

/**
 * The three access buckets (users, tokens, bindings) watched into an AccessDirectory: what every
 * service that authenticates gRPC callers holds (the scheduler, the router's KeyService). The
 * scheduler's AccessService writes through `users`/`tokens`/`bindings` and applies its own
 * writes at once; the other replicas and services see them within a watch's latency.
 */
export class AccessMirror {
  private constructor(
    readonly directory: AccessDirectory,
    readonly users: KvMirror<User>,
    readonly tokens: KvMirror<AccessTokenRecord>,
    readonly bindings: KvMirror<RoleBinding>,
  ) {}

  /** Opens the buckets and feeds `directory` from them; it is marked ready once all three are mirrored. */
  static async open(js: JetStreamClient, cluster: string, directory: AccessDirectory, logger: Logger): Promise<AccessMirror> {
    const users = new KvMirror(await KvStore.open(js, Buckets.accessUsers(cluster), User), { logger });
    const tokens = new KvMirror(await KvStore.open(js, Buckets.accessTokens(cluster), AccessTokenRecord), { logger });
    const bindings = new KvMirror(await KvStore.open(js, Buckets.accessBindings(cluster), RoleBinding), { logger });
    users.listen((_, change) => directory.applyUser(change));
    tokens.listen((_, change) => directory.applyToken(change));
    bindings.listen((_, change) => directory.applyBinding(change));
    const mirror = new AccessMirror(directory, users, tokens, bindings);
    await Promise.all([users.start(), tokens.start(), bindings.start()]);
    directory.markReady();
    return mirror;
  }

  stop(): void {
    for (const m of [this.users, this.tokens, this.bindings]) m.stop();
  }
}
