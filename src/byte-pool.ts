// Memory for the bytes of calls, reused (issue 31). A call's request and
// answer bytes live while it waits its turn and while its answer is sent; with
// tens of calls in flight they outlive a young-generation GC, move to the old
// generation and wait there for a full GC: Node's memory climbed by 20-30 MB
// between full GCs at 64 calls in flight (npm run bench, peak RSS). Bytes
// taken from here and given back when the call is done are used again instead.
// What is not given back (a call cut short) is freed by the GC, as before.

/** The smallest block handed out, in bytes: a request or answer rarely weighs less. */
const SMALLEST = 1024;
/** Blocks above 4 KiB come in steps of this. */
const STEP = 4096;

export interface BytePoolLimits {
  /** Blocks larger than this are allocated for the one use and never kept. */
  largest: number;
  /** At most this many bytes wait in the pool; what comes back beyond it is left to the GC. */
  kept: number;
}

/** ArrayBuffers by size (see blockSize), taken for a use and given back after it. */
export class BytePool {
  /** Free blocks by size. */
  private readonly free = new Map<number, ArrayBuffer[]>();
  private keptBytes = 0;

  constructor(private readonly limits: BytePoolLimits) {}

  /** A block of at least `n` bytes, its contents whatever they were. */
  take(n: number): ArrayBuffer {
    const size = blockSize(n);
    if (size > this.limits.largest) return fresh(n);
    const block = this.free.get(size)?.pop();
    if (block) {
      this.keptBytes -= size;
      return block;
    }
    return fresh(size);
  }

  /** A block taken here, no longer used by anyone. */
  give(block: ArrayBuffer): void {
    const size = block.byteLength;
    if (size > this.limits.largest || size !== blockSize(size) || this.keptBytes + size > this.limits.kept) return;
    const list = this.free.get(size);
    if (list) list.push(block);
    else this.free.set(size, [block]);
    this.keptBytes += size;
  }

  /** Bytes waiting to be taken again. */
  get idleBytes(): number {
    return this.keptBytes;
  }
}

/** New memory, not zeroed: whoever takes a block writes it before reading it. */
const fresh = (n: number): ArrayBuffer => Buffer.allocUnsafeSlow(n).buffer as ArrayBuffer;

/**
 * The block size that holds n bytes: 1, 2 or 4 KiB, then whole steps of 4 KiB. Steps, not powers of
 * two: a request the handler keeps is left to the GC with its block, which should not be twice its size.
 */
function blockSize(n: number): number {
  if (n <= STEP) return n <= SMALLEST ? SMALLEST : 2 ** Math.ceil(Math.log2(n));
  return Math.ceil(n / STEP) * STEP;
}
