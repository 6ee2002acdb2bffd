import { effectiveLoad } from '../engine-load';
import { PrefixTree } from '../prefix-tree';
import type { ReplicaView, RouteRequest } from '../replica';
import { CacheAwareOptions, ResolvedCacheAwareOptions, resolveCacheAwareOptions } from './cache-aware-options';
import { leastLoaded } from './least-request';
import type { RoutingPolicy } from './routing-policy';

/**
 * Sends a prompt to the replica most likely to hold its prefix in KV cache, unless that would
 * unbalance the deployment (SGLang's cache-aware routing):
 * 1. Load unbalanced (see CacheAwareOptions): the least loaded replica. Load is `effectiveLoad`:
 *    this router's in-flight requests plus those of other routers seen in the engines' metrics.
 * 2. Otherwise the replica whose remembered prompts share the longest prefix with this one, if
 *    the shared part is at least `cacheThreshold` of the prompt.
 * 3. Otherwise the least loaded replica (`leastLoaded`: a saturated KV cache counts as heavier),
 *    which then starts caching this prefix.
 * The prompt is remembered under the replica picked, whichever way it was picked, since that is
 * where its KV cache now lives. Prefixes are kept per model: adapters do not share KV cache.
 */
export class CacheAwarePolicy implements RoutingPolicy {
  readonly name = 'cache_aware';
  readonly options: ResolvedCacheAwareOptions;
  private readonly trees = new Map<string, PrefixTree>();
  private cursor = 0;

  constructor(options: CacheAwareOptions = {}, field = 'routing') {
    this.options = resolveCacheAwareOptions(options, field);
  }

  pick(request: RouteRequest, replicas: readonly ReplicaView[]): ReplicaView | undefined {
    const eligible = new Map<string, ReplicaView>();
    let min = Number.MAX_SAFE_INTEGER;
    let max = 0;
    for (const replica of replicas) {
      if (replica.ejected) continue;
      eligible.set(replica.id, replica);
      const load = effectiveLoad(replica);
      if (load < min) min = load;
      if (load > max) max = load;
    }
    if (eligible.size === 0) return undefined;

    const tree = this.treeFor(request.model);
    const { balanceAbsThreshold, balanceRelThreshold, cacheThreshold } = this.options;
    const unbalanced = max - min > balanceAbsThreshold && max > balanceRelThreshold * min;
    let chosen: ReplicaView | undefined;
    if (!unbalanced && eligible.size > 1) {
      const match = tree.match(request.text, (id) => eligible.has(id));
      if (match.replicaId !== undefined && match.ratio >= cacheThreshold) chosen = eligible.get(match.replicaId);
    }
    if (chosen === undefined) {
      this.cursor = (this.cursor + 1) % 0x7fffffff;
      chosen = leastLoaded(replicas, this.cursor) as ReplicaView;
    }
    tree.insert(request.text, chosen.id);
    return chosen;
  }

  removeReplica(replicaId: string): void {
    for (const tree of this.trees.values()) tree.removeReplica(replicaId);
  }

  /** The prefix tree of one model, for metrics and tests. */
  treeFor(model: string): PrefixTree {
    let tree = this.trees.get(model);
    if (tree === undefined) {
      tree = new PrefixTree({ maxCharsPerReplica: this.options.maxCharsPerReplica });
      this.trees.set(model, tree);
    }
    return tree;
  }
}
