// Page-aligned buffers, for direct I/O (O_DIRECT), which needs the memory it writes from (or
// reads into) aligned to the device's block size. Node's Buffers give no alignment guarantee and
// no way to see an address; the memory of a WebAssembly.Memory starts on a page boundary, so the
// buffers are cut from such memories at multiples of the page size. If an engine ever placed one
// elsewhere, the kernel refuses the first direct write (EINVAL) and the partial blob goes on with
// ordinary writes: nothing depends on the alignment but speed.

// the one WebAssembly API used here (the project's TypeScript libraries do not declare it)
declare const WebAssembly: { Memory: new (d: { initial: number }) => { readonly buffer: ArrayBuffer } };

/** bytes every direct transfer is aligned to (offset, length and memory) */
export const DIRECT_IO_ALIGN = 4096;

const WASM_PAGE = 64 * 1024;
/** a slab: one WebAssembly.Memory cut into buffers of one size (memories are never grown: that would detach their buffers) */
const SLAB_BYTES = 16 * 1024 * 1024;

const slabs = new WeakSet<ArrayBufferLike>();
const free = new Map<number, Buffer[]>();

/**
 * A buffer of `bytes` (a multiple of DIRECT_IO_ALIGN) whose memory is page-aligned, from a free
 * list of that size; an ordinary Buffer if no memory can be had that way. Give it back with
 * releaseAligned when done: slabs are kept for the next taker, never freed.
 */
export function takeAligned(bytes: number): Buffer {
  if (!(Number.isSafeInteger(bytes) && bytes > 0 && bytes % DIRECT_IO_ALIGN === 0)) throw new RangeError(`bytes: expected a positive multiple of ${DIRECT_IO_ALIGN}, got ${bytes}`);
  let list = free.get(bytes);
  if (!list) free.set(bytes, (list = []));
  if (list.length === 0) {
    let memory: { readonly buffer: ArrayBuffer };
    try {
      memory = new WebAssembly.Memory({ initial: Math.ceil(Math.max(bytes, SLAB_BYTES) / WASM_PAGE) });
    } catch {
      // the engine's limit on WebAssembly memories: an unaligned buffer still works, with ordinary writes
      return Buffer.allocUnsafeSlow(bytes);
    }
    slabs.add(memory.buffer);
    for (let at = 0; at + bytes <= memory.buffer.byteLength; at += bytes) list.push(Buffer.from(memory.buffer, at, bytes));
  }
  return list.pop() as Buffer;
}

export function releaseAligned(buf: Buffer): void {
  if (slabs.has(buf.buffer)) free.get(buf.length)?.push(buf);
}

/** Whether `buf` starts on a page boundary of a slab (its memory can go to the device as it is). */
export function isAligned(buf: Buffer): boolean {
  return buf.byteOffset % DIRECT_IO_ALIGN === 0 && slabs.has(buf.buffer);
}
