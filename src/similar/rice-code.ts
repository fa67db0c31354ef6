/**
 * Golomb-Rice coding of small non-negative integers, most significant bit first: a value v with
 * parameter k is v >> k in unary (that many 1 bits, then a 0) and then its k low bits. Sorted term
 * hashes are stored as the gaps between them, which this codes in about 17 bits where 22 would be
 * taken as they are (compact-document.ts). Pure, no I/O.
 */

/**
 * The k that codes `values` in the fewest bits, from 0 to `mostK`, and that many bits. The best k
 * is near log2 of the values' mean (a little under it), so only the few around it are tried.
 */
export function bestRiceParameter(
  values: ArrayLike<number>,
  mostK: number,
): { k: number; bits: number } {
  let sum = 0;
  for (let i = 0; i < values.length; i += 1) sum += values[i]!;
  const near = sum === 0 ? 0 : Math.floor(Math.log2(sum / values.length));
  // Within 0 to mostK, and never empty: a mean under a half (most values 0, as the counts of a
  // short report whose terms are mostly word pieces) puts `near` below -1.
  const from = Math.min(mostK, Math.max(0, near - 2));
  const to = Math.min(mostK, Math.max(from, near + 1));
  let best = { k: 0, bits: Infinity };
  for (let k = from; k <= to; k += 1) {
    let bits = 0;
    for (let i = 0; i < values.length; i += 1) bits += (values[i]! >>> k) + 1 + k;
    if (bits < best.bits) best = { k, bits };
  }
  return best;
}

export class BitWriter {
  private readonly bytes: Uint8Array;
  private at = 0;
  /** Bits not yet written out, the last `pending` of them. */
  private window = 0;
  private pending = 0;

  /** `bits`: how many will be written at most (bestRiceParameter says, for a run of values). */
  constructor(bits: number) {
    this.bytes = new Uint8Array(Math.ceil(bits / 8));
  }

  /** The low `count` bits of `value` (count ≤ 24). */
  write(value: number, count: number): void {
    this.window = (this.window << count) | (value & ((1 << count) - 1));
    this.pending += count;
    while (this.pending >= 8) {
      this.pending -= 8;
      this.bytes[this.at++] = (this.window >>> this.pending) & 0xff;
    }
  }

  writeRice(value: number, k: number): void {
    let quotient = value >>> k;
    for (; quotient >= 24; quotient -= 24) this.write(0xffffff, 24);
    // The quotient's 1s and the 0 that ends them.
    this.write(((1 << quotient) - 1) << 1, quotient + 1);
    this.write(value, k);
  }

  /** The bytes written, the last one padded with 0 bits. */
  finish(): Uint8Array {
    if (this.pending > 0) this.write(0, 8 - this.pending);
    return this.bytes.subarray(0, this.at);
  }
}

/** Reads what a BitWriter wrote; throws a RangeError past the end. */
export class BitReader {
  private readonly bytes: Uint8Array;
  private at: number;
  /** Bits read ahead, the last `count` of them. */
  private window = 0;
  private count = 0;

  constructor(bytes: Uint8Array, fromByte: number) {
    this.bytes = bytes;
    this.at = fromByte;
  }

  private fill(): void {
    while (this.count <= 24 && this.at < this.bytes.length) {
      this.window = (this.window << 8) | this.bytes[this.at++]!;
      this.count += 8;
    }
  }

  /** `count` bits (≤ 24) as a number. */
  read(count: number): number {
    if (this.count < count) this.fill();
    if (this.count < count) throw new RangeError('read past the end of the bits');
    this.count -= count;
    return (this.window >>> this.count) & ((1 << count) - 1);
  }

  readRice(k: number): number {
    if (this.count <= 24) this.fill();
    let quotient = 0;
    for (;;) {
      if (this.count === 0) throw new RangeError('read past the end of the bits');
      // The bits read ahead at the top of 32: their leading 1s are the unary quotient.
      const ones = Math.clz32(~(this.window << (32 - this.count)));
      if (ones < this.count) {
        quotient += ones;
        this.count -= ones + 1;
        break;
      }
      quotient += this.count;
      this.count = 0;
      this.fill();
    }
    if (k === 0) return quotient;
    if (this.count < k) this.fill();
    if (this.count < k) throw new RangeError('read past the end of the bits');
    this.count -= k;
    return quotient * (1 << k) + ((this.window >>> this.count) & ((1 << k) - 1));
  }

  /** Whether only padding (at most 7 zero bits) is left. */
  atEnd(): boolean {
    return this.at === this.bytes.length && this.count < 8;
  }
}
