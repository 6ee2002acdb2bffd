// Leases on trees, persisted in the cache root so that they outlive the process that holds them.
// A node's model delivery may restart while the pods that read its trees keep running (the node
// runtime leaves them alive); a lease kept only in memory would then be gone until the restarted
// process took it again, and an eviction in between could delete a tree under a running engine.
//
// <root>/leases.json holds every lease held: `{ version: 1, leases: [{ id, digest, holder,
// acquiredAt }] }`. Each change rewrites it whole, through a temporary file that is synced and
// renamed (the directory synced after), so a crash leaves the old list or the new one. Writes are
// serialized, and each writes the list as it is when its turn comes, so the last one on disk is
// the current list.
import { promises as fs } from 'fs';
import { randomBytes } from 'crypto';
import { join } from 'path';
import { writeFileAtomic } from './layout';

export const LEASES_FILE = 'leases.json';

/** A lease as it is persisted. */
export interface PersistedLease {
  /** Unique per lease; two leases on one tree are two entries. */
  readonly id: string;
  /** The manifest digest that names the tree. */
  readonly digest: string;
  /** Who holds it (e.g. the artifact a workload loads), so that a restarted owner can tell its leases apart; may be empty. */
  readonly holder: string;
  /** ms since the epoch */
  readonly acquiredAt: number;
}

interface LeaseFile {
  version: 1;
  leases: PersistedLease[];
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The leases persisted under `root` ([] when there is no file); a file this module did not write is refused, naming the field. */
export async function readPersistedLeases(root: string): Promise<PersistedLease[]> {
  const path = join(root, LEASES_FILE);
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return parseLeaseFile(text, path);
}

/** Parses leases.json; `where` names the file in errors. */
export function parseLeaseFile(text: string, where: string): PersistedLease[] {
  const fail = (field: string, what: string): never => {
    throw new Error(`INVALID_LEASES: ${where}: ${field}: ${what} (the file is written only by the cache; delete it to drop every lease)`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return fail('(file)', `not JSON: ${(err as Error).message}`);
  }
  const file = parsed as Partial<LeaseFile> | null;
  if (typeof file !== 'object' || file === null) return fail('(file)', 'expected an object');
  if (file.version !== 1) fail('version', `expected 1, got ${JSON.stringify(file.version)}`);
  if (!Array.isArray(file.leases)) return fail('leases', 'expected an array');
  const ids = new Set<string>();
  return file.leases.map((l: Partial<PersistedLease>, i) => {
    if (typeof l !== 'object' || l === null) return fail(`leases[${i}]`, 'expected an object');
    if (typeof l.id !== 'string' || l.id === '' || ids.has(l.id)) fail(`leases[${i}].id`, `expected a unique non-empty string, got ${JSON.stringify(l.id)}`);
    if (typeof l.digest !== 'string' || !DIGEST.test(l.digest)) fail(`leases[${i}].digest`, `expected sha256:<64 hex>, got ${JSON.stringify(l.digest)}`);
    if (typeof l.holder !== 'string') fail(`leases[${i}].holder`, `expected a string, got ${JSON.stringify(l.holder)}`);
    if (typeof l.acquiredAt !== 'number' || !Number.isFinite(l.acquiredAt)) fail(`leases[${i}].acquiredAt`, `expected ms since the epoch, got ${JSON.stringify(l.acquiredAt)}`);
    ids.add(l.id as string);
    return { id: l.id as string, digest: l.digest as string, holder: l.holder as string, acquiredAt: l.acquiredAt as number };
  });
}

/** The leases of one cache root, in memory and on disk. */
export class LeaseLedger {
  private readonly leases = new Map<string, PersistedLease>();
  private writing: Promise<void> = Promise.resolve();

  private constructor(private readonly root: string) {}

  /**
   * Loads the persisted leases and keeps those whose tree `isTree` still knows; the others (a tree
   * removed while no process held the cache) are dropped from the file.
   */
  static async open(root: string, isTree: (digest: string) => boolean): Promise<{ ledger: LeaseLedger; dropped: PersistedLease[] }> {
    const ledger = new LeaseLedger(root);
    const dropped: PersistedLease[] = [];
    for (const lease of await readPersistedLeases(root)) {
      if (isTree(lease.digest)) ledger.leases.set(lease.id, lease);
      else dropped.push(lease);
    }
    if (dropped.length > 0) await ledger.persist();
    return { ledger, dropped };
  }

  list(): PersistedLease[] {
    return [...this.leases.values()];
  }

  /** Records a lease; resolves once it is on disk. */
  async add(digest: string, holder: string): Promise<PersistedLease> {
    const lease: PersistedLease = { id: randomBytes(8).toString('hex'), digest, holder, acquiredAt: Date.now() };
    this.leases.set(lease.id, lease);
    try {
      await this.persist();
    } catch (err) {
      // not on disk: not held either, so the caller's failure leaves nothing behind
      this.leases.delete(lease.id);
      throw err;
    }
    return lease;
  }

  /** Forgets a lease (a no-op for one already gone); resolves once the file no longer lists it. */
  async remove(id: string): Promise<boolean> {
    if (!this.leases.delete(id)) return false;
    await this.persist();
    return true;
  }

  private persist(): Promise<void> {
    const write = this.writing.then(() => writeFileAtomic(join(this.root, LEASES_FILE), JSON.stringify({ version: 1, leases: this.list() } satisfies LeaseFile)));
    this.writing = write.catch(() => undefined);
    return write;
  }
}
