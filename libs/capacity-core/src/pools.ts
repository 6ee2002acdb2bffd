/**
 * Pool identity and naming. Nodes are interchangeable — and so form one pool — when their CPU
 * (vendor + model), accelerator vendor + product, OS and architecture are equal.
 */
import { createHash } from 'crypto';
import { Accelerator, AcceleratorVendor, NodeInventory, PoolIdentity } from '@gpufleet/contracts';

/** The accelerator product a node is pooled by, with its vendor. */
export interface DominantProduct {
  vendor: AcceleratorVendor;
  product: string;
}

/**
 * The product most of a node's accelerators are. Nodes with mixed products are rare (a
 * replacement card of a newer revision); pooling by the majority keeps the node schedulable
 * as what it mostly is, and only accelerators of that product are offered (the others would
 * otherwise be sold under the wrong name). Ties go to the alphabetically first product so the
 * choice does not depend on enumeration order. Undefined for a CPU-only node.
 */
export function dominantProduct(accelerators: readonly Accelerator[]): DominantProduct | undefined {
  if (accelerators.length === 0) return undefined;
  const first = accelerators[0];
  if (accelerators.every((a) => a.product === first.product && a.vendor === first.vendor)) {
    return { vendor: first.vendor, product: first.product };
  }
  const counts = new Map<string, { count: number; vendor: AcceleratorVendor; product: string }>();
  for (const a of accelerators) {
    const key = `${a.vendor}\u0000${a.product}`;
    const entry = counts.get(key);
    if (entry) entry.count++;
    else counts.set(key, { count: 1, vendor: a.vendor, product: a.product });
  }
  let best: { count: number; vendor: AcceleratorVendor; product: string } | undefined;
  for (const entry of counts.values()) {
    if (!best || entry.count > best.count || (entry.count === best.count && entry.product < best.product)) best = entry;
  }
  return best && { vendor: best.vendor, product: best.product };
}

/** Whether an accelerator is of the product its node is pooled by. */
export function isPoolAccelerator(accelerator: Accelerator, identity: PoolIdentity): boolean {
  return accelerator.product === identity.acceleratorProduct && accelerator.vendor === identity.acceleratorVendor;
}

export function poolIdentityOf(inventory: NodeInventory): PoolIdentity {
  const cpu = inventory.cpu;
  const dominant = dominantProduct(inventory.accelerators);
  return {
    cpu: [cpu?.vendor ?? '', cpu?.model ?? ''].filter((s) => s !== '').join(' ').trim(),
    acceleratorVendor: dominant?.vendor ?? AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED,
    acceleratorProduct: dominant?.product ?? '',
    os: inventory.os,
    architecture: cpu?.architecture ?? '',
  };
}

/** An unambiguous string form of an identity, used as a map key. */
export function poolIdentityKey(identity: PoolIdentity): string {
  return JSON.stringify([
    identity.cpu,
    identity.acceleratorVendor,
    identity.acceleratorProduct,
    identity.os,
    identity.architecture,
  ]);
}

/** RFC 1123 labels are at most 63 characters; the base name leaves room for "-" + a hash. */
const DNS_LABEL_MAX = 63;
const BASE_NAME_MAX = DNS_LABEL_MAX - 1 - 8;

function dnsSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** Vendor words nvidia-smi, amd-smi and npu-smi put before the product. */
const VENDOR_PREFIX = /^(nvidia|amd|huawei)\s+/i;
/** CPUID vendor strings lscpu reports; the model name says the vendor again. */
const CPUID_VENDOR = /\b(GenuineIntel|AuthenticAMD|HygonGenuine)\b/g;
/** Words in /proc/cpuinfo model names that tell nothing apart. */
const CPU_MODEL_NOISE = /\((r|tm)\)|\bcpu\b|\bprocessor\b|@\s*[\d.]+\s*ghz/gi;

/** "cpu intel intel xeon" → "cpu-intel-xeon": vendor fields often repeat the model's first word. */
function withoutRepeatedWords(text: string): string {
  const words = dnsSlug(text).split('-').filter((w) => w !== '');
  return words.filter((w, i) => i === 0 || w !== words[i - 1]).join('-');
}

/**
 * Human-readable, DNS-safe name of a pool, e.g. "h100-80gb-hbm3-x86-64" for a GPU pool and
 * "cpu-amd-epyc-9654-96-core-x86-64" for a CPU pool. Identities differing only in CPU or OS
 * share a base name; `PoolNames` disambiguates those.
 */
export function poolBaseName(identity: PoolIdentity): string {
  const arch = dnsSlug(identity.architecture);
  const subject =
    identity.acceleratorProduct !== ''
      ? dnsSlug(identity.acceleratorProduct.replace(VENDOR_PREFIX, ''))
      : withoutRepeatedWords(`cpu ${identity.cpu.replace(CPUID_VENDOR, '').replace(CPU_MODEL_NOISE, ' ')}`);
  const name = [subject || 'pool', arch].filter((s) => s !== '').join('-');
  return name.slice(0, BASE_NAME_MAX).replace(/-+$/, '');
}

/** Hex digest prefix of the identity; the same identity always gets the same suffix. */
export function poolIdentityHash(identity: PoolIdentity, length = 6): string {
  return createHash('sha256').update(poolIdentityKey(identity)).digest('hex').slice(0, length);
}

/** A pool name restored from the state store, so names survive a scheduler restart. */
export interface PinnedPoolName {
  identity: PoolIdentity;
  name: string;
}

/**
 * Hands out pool names. A pool keeps its name for as long as it exists (queues and quotas refer
 * to it). The first identity to claim a base name gets it plain; a later, different identity
 * with the same base name gets "<base>-<hash of its identity>". Names restored from the state
 * store (`pinned`) are honoured and reserved for their identity, which makes names independent
 * of the order in which nodes are replayed after a restart.
 */
export class PoolNames {
  private readonly nameByKey = new Map<string, string>();
  private readonly keyByName = new Map<string, string>();
  private readonly pinnedByKey = new Map<string, string>();
  private readonly pinnedKeyByName = new Map<string, string>();

  constructor(pinned: Iterable<PinnedPoolName> = []) {
    for (const { identity, name } of pinned) {
      const key = poolIdentityKey(identity);
      this.pinnedByKey.set(key, name);
      this.pinnedKeyByName.set(name, key);
    }
  }

  nameOf(identityKey: string): string | undefined {
    return this.nameByKey.get(identityKey);
  }

  assign(identityKey: string, identity: PoolIdentity): string {
    const existing = this.nameByKey.get(identityKey);
    if (existing !== undefined) return existing;
    const pinned = this.pinnedByKey.get(identityKey);
    const base = poolBaseName(identity);
    let name = pinned !== undefined && this.isFree(pinned, identityKey) ? pinned : base;
    // A full sha256 collision is out of reach; lengthening the hash only guards the 6-char prefix.
    for (let length = 6; !this.isFree(name, identityKey); length += 2) {
      name = `${base}-${poolIdentityHash(identity, length)}`;
    }
    this.nameByKey.set(identityKey, name);
    this.keyByName.set(name, identityKey);
    return name;
  }

  release(identityKey: string): void {
    const name = this.nameByKey.get(identityKey);
    if (name === undefined) return;
    this.nameByKey.delete(identityKey);
    this.keyByName.delete(name);
  }

  private isFree(name: string, identityKey: string): boolean {
    const holder = this.keyByName.get(name);
    const pinnedTo = this.pinnedKeyByName.get(name);
    return (holder === undefined || holder === identityKey) && (pinnedTo === undefined || pinnedTo === identityKey);
  }
}
