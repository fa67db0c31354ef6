/**
 * What is kept of a record for similarity: its most telling terms, at most MAX_TERMS of them, each
 * a 22-bit hash (the term's 32-bit hash folded: terms whose folded hashes meet count as one; with
 * a million distinct terms in a project a fifth of them meet another, and even four times as
 * crowded the shared data groups as well: docs/similar.md, "Cost") with its count quantised to
 * quarters (1 to 255). It is kept once per delivery in Redis, so it is stored coded, losing
 * nothing (version 4): a version byte, the number of terms, a byte of the two Rice parameters
 * (rice-code.ts), then the gaps between the ascending hashes and the counts, each Rice-coded with
 * the parameter that takes fewest bits for this record. About 205 bytes for 80 terms (the hashes'
 * gaps some 17 bits each, the counts, mostly 1 to 8 quarters, 3); 2 + 1 + 176 + 90 at most.
 * Versions 3 (the same coding of 24-bit hashes) and 2 (each 24-bit hash in 3 bytes, each count in
 * 1) are still read, their hashes folded to 22 bits as they are read, so a stream written before
 * keeps working (docs/upgrading.md).
 */
import type { TermCounts } from './document-terms.js';
import { BitReader, BitWriter, bestRiceParameter } from './rice-code.js';
import { foldHash, KEPT_HASH_BITS, narrowHash } from './term-hash.js';
import { TermTable } from './term-table.js';

export { foldHash } from './term-hash.js';

/** Terms kept per record. */
export const MAX_TERMS = 80;

/** Counts are kept in quarters, so a pair term (counting half) and title terms keep their weight. */
export const COUNT_STEP = 0.25;

const FORMAT_VERSION = 4;

/** The version before: the same coding of hashes of WIDE_HASH_BITS. Still read. */
const WIDE_VERSION = 3;

/** The version before that: each hash of WIDE_HASH_BITS in HASH_BYTES, each count in a byte. Still read. */
const FIXED_WIDTH_VERSION = 2;

/** Bytes of a stored term hash in the fixed-width version. */
const HASH_BYTES = 3;

/** Bits of a term hash (foldHash). */
const HASH_BITS = KEPT_HASH_BITS;

/** Bits of a term hash in versions 2 and 3. */
const WIDE_HASH_BITS = 24;

/** Largest Rice parameter of the counts (3 bits of the parameters' byte). */
const MOST_COUNT_K = 7;

/** The least and the most a rarity function gives (compactTerms reads no rarity it need not). */
export interface RarityRange {
  readonly least: number;
  readonly most: number;
}

export interface CompactDocument {
  /** Term hashes, ascending. */
  readonly hashes: Uint32Array;
  /** Each term's weighted count, in COUNT_STEPs, 1 to 255. */
  readonly counts: Uint8Array;
}

/**
 * Keeps the `maxTerms` terms that tell most about the record: the highest count times the term's
 * rarity (`rarity(hash)`, from the records seen before, capped: choice-rarity.ts), ties to the
 * lower hash so the choice depends on nothing else.
 */
export function compactDocument(
  terms: TermCounts,
  rarity: (hash: number) => number,
  maxTerms = MAX_TERMS,
): CompactDocument {
  const folded = new TermTable();
  for (const [hash, count] of terms) folded.add(foldHash(hash), count);
  return compactTerms(folded, rarity, maxTerms);
}

/**
 * compactDocument of terms whose hashes are folded already (recordTerms with `fold`), as grouping
 * makes them: no Map of the 32-bit terms in between.
 */
export function compactTerms(
  folded: TermTable,
  rarity: (hash: number) => number,
  maxTerms = MAX_TERMS,
  range?: RarityRange,
): CompactDocument {
  const hashes = folded.hashes();
  const counts = folded.counts();
  const n = hashes.length;
  let kept: ArrayLike<number> = { length: n };
  if (n > maxTerms) {
    // Rarity is read only when there is a choice to make, and only for a term that may be kept:
    // one whose count at the most rarity is below what maxTerms terms reach at the least cannot
    // be (most of a long report's terms are word pieces of a quarter), so its value stays 0,
    // below any term's. The same terms are kept.
    let floor = 0;
    if (range !== undefined) {
      const most = mostTelling(counts, hashes, maxTerms);
      let least = Infinity;
      for (const at of most) least = Math.min(least, counts[at]!);
      floor = least * range.least;
    }
    const values = new Float64Array(n);
    for (let i = 0; i < n; i += 1) {
      const count = counts[i]!;
      if (range === undefined || count * range.most >= floor) {
        values[i] = count * rarity(hashes[i]!);
      }
    }
    kept = mostTelling(values, hashes, maxTerms);
  }
  // Each kept term's hash and quantised count in one number (HASH_BITS + 8 bits): sorted as
  // numbers, they come in ascending hash order with their counts. Plain loops: a typed array's
  // from() with a function cost as much as the choice itself.
  const packed = new Float64Array(kept.length);
  for (let i = 0; i < kept.length; i += 1) {
    const at = n > maxTerms ? kept[i]! : i;
    packed[i] = hashes[at]! * 256 + quantise(counts[at]!);
  }
  packed.sort();
  const keptHashes = new Uint32Array(packed.length);
  const keptCounts = new Uint8Array(packed.length);
  for (let i = 0; i < packed.length; i += 1) {
    keptHashes[i] = Math.floor(packed[i]! / 256);
    keptCounts[i] = packed[i]! % 256;
  }
  return { hashes: keptHashes, counts: keptCounts };
}

/**
 * The positions of the `most` terms of highest value, ties to the lower hash (a total order, so
 * which are kept depends only on the terms), in no order: a heap with the least telling kept at
 * its root, so a term that does not beat it costs one comparison, and no sort of all the terms.
 */
function mostTelling(values: Float64Array, hashes: Uint32Array, most: number): Int32Array {
  const above = (a: number, b: number) =>
    values[a]! > values[b]! || (values[a] === values[b] && hashes[a]! < hashes[b]!);
  const heap = new Int32Array(most);
  let size = 0;
  for (let term = 0; term < values.length; term += 1) {
    let at: number;
    if (size < most) {
      at = size;
      size += 1;
      for (let parent = (at - 1) >> 1; at > 0 && above(heap[parent]!, term);) {
        heap[at] = heap[parent]!;
        at = parent;
        parent = (at - 1) >> 1;
      }
    } else {
      if (!above(term, heap[0]!)) continue;
      at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= size) break;
        const lower = left + 1 < size && above(heap[left]!, heap[left + 1]!) ? left + 1 : left;
        if (!above(term, heap[lower]!)) break;
        heap[at] = heap[lower]!;
        at = lower;
      }
    }
    heap[at] = term;
  }
  return heap;
}

/** A document of 24-bit hashes with its hashes folded to HASH_BITS, terms that meet as one. */
function narrowed(wide: CompactDocument): CompactDocument {
  const counts = new Map<number, number>();
  wide.hashes.forEach((hash, i) => {
    const short = narrowHash(hash);
    counts.set(short, Math.min(255, (counts.get(short) ?? 0) + wide.counts[i]!));
  });
  const hashes = Uint32Array.from(counts.keys()).sort();
  return { hashes, counts: Uint8Array.from(hashes, (hash) => counts.get(hash)!) };
}

function quantise(count: number): number {
  return Math.min(255, Math.max(1, Math.round(count / COUNT_STEP)));
}

export function encodeCompactDocument(document: CompactDocument): Uint8Array {
  const n = document.hashes.length;
  const gaps = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    const hash = document.hashes[i]!;
    gaps[i] = i === 0 ? hash : hash - document.hashes[i - 1]! - 1;
  }
  // Counts are at least 1: coded less one.
  const counts = new Uint8Array(n);
  for (let i = 0; i < n; i += 1) counts[i] = document.counts[i]! - 1;
  const hashCode = bestRiceParameter(gaps, HASH_BITS - 1);
  const countCode = bestRiceParameter(counts, MOST_COUNT_K);
  const bits = new BitWriter(hashCode.bits + countCode.bits);
  for (const gap of gaps) bits.writeRice(gap, hashCode.k);
  for (const count of counts) bits.writeRice(count, countCode.k);
  const coded = bits.finish();
  const bytes = new Uint8Array(3 + coded.length);
  bytes[0] = FORMAT_VERSION;
  bytes[1] = n;
  bytes[2] = hashCode.k | (countCode.k << 5);
  bytes.set(coded, 3);
  return bytes;
}

/**
 * Reads what encodeCompactDocument wrote, or version 3 or 2 (their hashes folded to HASH_BITS);
 * throws a RangeError on anything else.
 */
export function decodeCompactDocument(bytes: Uint8Array): CompactDocument {
  if (bytes[0] === FIXED_WIDTH_VERSION) return narrowed(decodeFixedWidth(bytes));
  if (bytes[0] === WIDE_VERSION) return narrowed(decodeRice(bytes, WIDE_HASH_BITS));
  if (bytes[0] !== FORMAT_VERSION) {
    throw new RangeError('not a compact document of a version this reads');
  }
  return decodeRice(bytes, HASH_BITS);
}

/** Versions 3 and 4: the Rice-coded gaps of hashes of `hashBits`, then the counts. */
function decodeRice(bytes: Uint8Array, hashBits: number): CompactDocument {
  const n = bytes[1] ?? 0;
  const parameters = bytes[2] ?? 0;
  if (bytes.length < 3) throw new RangeError('not a compact document of a version this reads');
  const bits = new BitReader(bytes, 3);
  const hashK = parameters & 0x1f;
  const countK = parameters >> 5;
  if (hashK >= hashBits) throw new RangeError('not a compact document of a version this reads');
  const hashes = new Uint32Array(n);
  let hash = -1;
  for (let i = 0; i < n; i += 1) {
    hash += bits.readRice(hashK) + 1;
    hashes[i] = hash;
  }
  const counts = new Uint8Array(n);
  let most = 0;
  for (let i = 0; i < n; i += 1) {
    const count = bits.readRice(countK) + 1;
    counts[i] = count;
    most = Math.max(most, count);
  }
  if (hash >= 2 ** hashBits || most > 255 || !bits.atEnd()) {
    throw new RangeError('not a compact document of a version this reads');
  }
  return { hashes, counts };
}

/** Version 2: the hashes (3 bytes each, little-endian), then the counts (1 byte each). */
function decodeFixedWidth(bytes: Uint8Array): CompactDocument {
  const n = bytes[1] ?? 0;
  if (bytes.length !== 2 + (HASH_BYTES + 1) * n) {
    throw new RangeError('not a compact document of a version this reads');
  }
  const hashes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    const at = 2 + HASH_BYTES * i;
    hashes[i] = bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16);
  }
  return { hashes, counts: bytes.slice(2 + HASH_BYTES * n, 2 + (HASH_BYTES + 1) * n) };
}
