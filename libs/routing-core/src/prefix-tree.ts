/**
 * An approximate radix tree of the prompt text each replica has recently served, the way
 * SGLang's cache-aware router keeps one: it stands in for the replicas' prefix caches, which the
 * router cannot see. Inserting a prompt under a replica claims every node on its path for that
 * replica; matching a prompt walks as far as it agrees with the tree and answers the replica that
 * claims the deepest node reached, most recently used first.
 *
 * It works on UTF-16 code units: no tokenizer runs on the router's hot path, and a shared
 * character prefix is a shared token prefix for every tokenizer that matters here.
 *
 * Invariants (checked by `audit()`):
 * - Claims are prefix-closed: a replica that claims a node claims all its ancestors, so the
 *   deepest node a match reaches names exactly the replicas with the longest shared prefix.
 * - A node nobody claims is not in the tree.
 * - Each replica's claims sit in one LRU list in which every node comes before its ancestors.
 *   Inserting touches its path from the leaf up, and a split puts the new upper half right after
 *   the lower half, so the list head is always one of the replica's leaves and eviction is O(1)
 *   per node, with no scan of the tree.
 */

import { checkInteger } from './errors';

export interface PrefixMatch {
  /** The replica claiming the longest prefix of the text; undefined when nothing matched. */
  readonly replicaId: string | undefined;
  /** Characters (UTF-16 code units) of the text that replica shares with the tree. */
  readonly matchedChars: number;
  /** matchedChars / text length, 0-1; 0 for an empty text. */
  readonly ratio: number;
}

export interface PrefixTreeOptions {
  /**
   * Characters of prompt text kept per replica (UTF-16 code units, ~4 per token). Past it the
   * replica's least recently used leaves are dropped. Size it like the replica's prefix cache:
   * keeping more than the engine can hold makes the router believe in cache hits that are gone.
   */
  readonly maxCharsPerReplica?: number;
}

/** 4 Mi characters, roughly a million tokens: the prefix cache of one large-GPU replica. */
export const DEFAULT_MAX_CHARS_PER_REPLICA = 4 * 1024 * 1024;

const NO_MATCH: PrefixMatch = Object.freeze({ replicaId: undefined, matchedChars: 0, ratio: 0 });

class TreeNode {
  /** First character code of the child's edge → child; created with the first child (most nodes are leaves). */
  children: Map<number, TreeNode> | undefined = undefined;
  /** Replica id → that replica's claim on this node. */
  readonly claims = new Map<string, Claim>();

  constructor(
    /** The text on the edge from the parent; never empty except at the root. */
    public edge: string,
    public parent: TreeNode | undefined,
  ) {}
}

/** One replica's claim on one node, and its link in that replica's LRU list. */
class Claim {
  prev: Claim | undefined = undefined;
  next: Claim | undefined = undefined;

  constructor(
    readonly node: TreeNode,
    readonly share: ReplicaShare,
    /** Logical time of the last insert through this node for this replica. */
    public lastUsed: number,
  ) {}
}

/** One replica's part of the tree: its size and its claims, least recently used first. */
class ReplicaShare {
  chars = 0;
  oldest: Claim | undefined = undefined;
  newest: Claim | undefined = undefined;

  constructor(readonly id: string) {}

  unlink(claim: Claim): void {
    if (claim.prev) claim.prev.next = claim.next;
    else this.oldest = claim.next;
    if (claim.next) claim.next.prev = claim.prev;
    else this.newest = claim.prev;
    claim.prev = claim.next = undefined;
  }

  append(claim: Claim): void {
    claim.prev = this.newest;
    claim.next = undefined;
    if (this.newest) this.newest.next = claim;
    else this.oldest = claim;
    this.newest = claim;
  }

  insertAfter(anchor: Claim, claim: Claim): void {
    claim.prev = anchor;
    claim.next = anchor.next;
    if (anchor.next) anchor.next.prev = claim;
    else this.newest = claim;
    anchor.next = claim;
  }
}

/** Replica id → whether a match may answer it (not ejected, still a member of the deployment). */
export type ReplicaFilter = (replicaId: string) => boolean;

export class PrefixTree {
  private readonly root = new TreeNode('', undefined);
  private readonly shares = new Map<string, ReplicaShare>();
  private readonly maxChars: number;
  /** Logical clock for LRU order: deterministic, and cheaper than reading the time. */
  private tick = 0;
  private nodes = 0;
  /** Reused by insert so the hot path allocates only the nodes it creates. */
  private readonly path: TreeNode[] = [];

  constructor(options: PrefixTreeOptions = {}) {
    this.maxChars = checkInteger('maxCharsPerReplica', options.maxCharsPerReplica ?? DEFAULT_MAX_CHARS_PER_REPLICA, 1);
  }

  /** Nodes in the tree, the root excluded. */
  get nodeCount(): number {
    return this.nodes;
  }

  /** Replicas with at least one claim. */
  replicaIds(): string[] {
    return [...this.shares.keys()];
  }

  /** Characters the replica claims (the sum of its nodes' edge lengths). */
  charsOf(replicaId: string): number {
    return this.shares.get(replicaId)?.chars ?? 0;
  }

  /**
   * Records that `replicaId` served `text`: claims its path, marks it most recently used and
   * evicts the replica's least recently used leaves past its budget. A text longer than the
   * budget is cut to it: the prefix is the part a later request can share.
   */
  insert(text: string, replicaId: string): void {
    const kept = text.length > this.maxChars ? text.slice(0, this.maxChars) : text;
    if (kept.length === 0) return;
    let share = this.shares.get(replicaId);
    if (share === undefined) {
      share = new ReplicaShare(replicaId);
      this.shares.set(replicaId, share);
    }
    const now = ++this.tick;
    const path = this.path;
    path.length = 0;

    let node = this.root;
    let at = 0;
    while (at < kept.length) {
      const first = kept.charCodeAt(at);
      const child = node.children?.get(first);
      if (child === undefined) {
        const leaf = new TreeNode(kept.slice(at), node);
        (node.children ??= new Map()).set(first, leaf);
        this.nodes++;
        path.push(leaf);
        break;
      }
      const common = commonPrefixLength(child.edge, kept, at);
      node = common < child.edge.length ? this.split(child, common) : child;
      path.push(node);
      at += common;
    }

    // Leaf first, so every node lands before its ancestors in the replica's LRU list.
    for (let i = path.length - 1; i >= 0; i--) this.touch(path[i], share, now);
    path.length = 0;
    while (share.chars > this.maxChars && share.oldest !== undefined) this.release(share.oldest);
  }

  /**
   * The replica sharing the longest prefix with `text`; among several, the one that used it
   * most recently. Read-only: the caller inserts the text under the replica it finally picks.
   * With `eligible`, replicas it rejects are ignored as if they had no claims.
   */
  match(text: string, eligible?: ReplicaFilter): PrefixMatch {
    let node = this.root;
    let matched = 0;
    while (matched < text.length) {
      const child = node.children?.get(text.charCodeAt(matched));
      if (child === undefined || (eligible !== undefined && !hasEligibleClaim(child, eligible))) break;
      const common = commonPrefixLength(child.edge, text, matched);
      matched += common;
      node = child;
      if (common < child.edge.length) break;
    }
    if (node === this.root) return NO_MATCH;
    let best: Claim | undefined;
    for (const claim of node.claims.values()) {
      if (eligible !== undefined && !eligible(claim.share.id)) continue;
      if (best === undefined || claim.lastUsed > best.lastUsed) best = claim;
    }
    return { replicaId: best?.share.id, matchedChars: matched, ratio: matched / text.length };
  }

  /** Drops every claim of a replica that left the deployment. */
  removeReplica(replicaId: string): void {
    const share = this.shares.get(replicaId);
    if (share === undefined) return;
    while (share.oldest !== undefined) this.release(share.oldest);
    this.shares.delete(replicaId);
  }

  /**
   * Recomputes every replica's size from the nodes and checks the invariants in the header.
   * For tests and debugging: it walks the whole tree.
   */
  audit(): { chars: Map<string, number>; nodes: number; problems: string[] } {
    const chars = new Map<string, number>();
    const problems: string[] = [];
    let nodes = 0;
    const walk = (node: TreeNode, depth: string): void => {
      for (const [first, child] of node.children ?? []) {
        nodes++;
        const where = `${depth}/${JSON.stringify(child.edge.slice(0, 16))}`;
        if (child.edge.length === 0 || child.edge.charCodeAt(0) !== first) problems.push(`${where}: edge does not start with its key`);
        if (child.parent !== node) problems.push(`${where}: wrong parent`);
        if (child.claims.size === 0) problems.push(`${where}: unclaimed node kept`);
        for (const id of child.claims.keys()) {
          if (node !== this.root && !node.claims.has(id)) problems.push(`${where}: ${id} claims a node but not its parent`);
          chars.set(id, (chars.get(id) ?? 0) + child.edge.length);
        }
        walk(child, where);
      }
    };
    walk(this.root, '');
    if (nodes !== this.nodes) problems.push(`node count ${this.nodes}, tree has ${nodes}`);
    for (const share of this.shares.values()) {
      if ((chars.get(share.id) ?? 0) !== share.chars) problems.push(`${share.id}: size ${share.chars}, claims add up to ${chars.get(share.id) ?? 0}`);
      if (share.chars > this.maxChars) problems.push(`${share.id}: size ${share.chars} over ${this.maxChars}`);
      const seen = new Set<TreeNode>();
      for (let claim = share.oldest; claim !== undefined; claim = claim.next) {
        for (const child of claim.node.children?.values() ?? []) {
          if (child.claims.has(share.id) && !seen.has(child)) problems.push(`${share.id}: a node comes before its child in the LRU list`);
        }
        seen.add(claim.node);
      }
    }
    return { chars, nodes, problems };
  }

  private touch(node: TreeNode, share: ReplicaShare, now: number): void {
    let claim = node.claims.get(share.id);
    if (claim === undefined) {
      claim = new Claim(node, share, now);
      node.claims.set(share.id, claim);
      share.chars += node.edge.length;
    } else {
      share.unlink(claim);
      claim.lastUsed = now;
    }
    share.append(claim);
  }

  /** Cuts `child`'s edge after `at` characters; returns the new upper node. Sizes are unchanged. */
  private split(child: TreeNode, at: number): TreeNode {
    const parent = child.parent as TreeNode;
    const upper = new TreeNode(child.edge.slice(0, at), parent);
    (parent.children as Map<number, TreeNode>).set(upper.edge.charCodeAt(0), upper);
    child.edge = child.edge.slice(at);
    child.parent = upper;
    upper.children = new Map([[child.edge.charCodeAt(0), child]]);
    this.nodes++;
    for (const claim of child.claims.values()) {
      const copy = new Claim(upper, claim.share, claim.lastUsed);
      upper.claims.set(claim.share.id, copy);
      claim.share.insertAfter(claim, copy);
    }
    return upper;
  }

  /** Drops one claim; the node goes with its last claim (its children went before it). */
  private release(claim: Claim): void {
    const { node, share } = claim;
    share.unlink(claim);
    node.claims.delete(share.id);
    share.chars -= node.edge.length;
    if (node.claims.size === 0 && node.parent !== undefined) {
      node.parent.children?.delete(node.edge.charCodeAt(0));
      node.parent = undefined;
      this.nodes--;
    }
  }
}

/** Below this many characters a charCodeAt loop is cheaper than building substrings to compare. */
const SCAN_CHARS = 32;

/**
 * Length of the common prefix of `edge` and `text` from `offset`.
 *
 * V8 compares strings with `===` natively (memcmp speed: ~0.1 µs for 2 KB) while a charCodeAt
 * loop costs several ns per character, and String.prototype.startsWith is no faster than the
 * loop. So: scan a short head (most edges that differ, differ early), then compare whole ranges
 * with `===` on substrings (slices share memory, no copy), binary-searching the first
 * difference when the range is not equal.
 */
function commonPrefixLength(edge: string, text: string, offset: number): number {
  const rest = text.length - offset;
  const limit = edge.length < rest ? edge.length : rest;
  const head = limit < SCAN_CHARS ? limit : SCAN_CHARS;
  let equal = scan(edge, text, offset, 0, head);
  if (equal < head || head === limit) return equal;
  if (sameRange(edge, text, offset, equal, limit)) return limit;
  let differs = limit; // the range [equal, differs) holds the first difference
  while (differs - equal > SCAN_CHARS) {
    const mid = (equal + differs) >>> 1;
    if (sameRange(edge, text, offset, equal, mid)) equal = mid;
    else differs = mid;
  }
  return scan(edge, text, offset, equal, differs);
}

/** First index in [from, to) where edge and text (shifted by offset) differ; `to` if none. */
function scan(edge: string, text: string, offset: number, from: number, to: number): number {
  let i = from;
  while (i < to && edge.charCodeAt(i) === text.charCodeAt(offset + i)) i++;
  return i;
}

function sameRange(edge: string, text: string, offset: number, from: number, to: number): boolean {
  return edge.substring(from, to) === text.substring(offset + from, offset + to);
}

function hasEligibleClaim(node: TreeNode, eligible: ReplicaFilter): boolean {
  for (const id of node.claims.keys()) if (eligible(id)) return true;
  return false;
}
