/**
 * What is kept of a record for similarity: its most telling terms, at most MAX_TERMS of them, each
 * a 24-bit hash (the term's 32-bit hash folded: terms whose folded hashes meet count as one, which
 * among the few thousand terms of a project's records is rare) with its count quantised to a
 * byte. Stored as bytes: a version, the number of terms, the hashes (3 bytes each, little-endian)
 * and the counts (1 byte each), 2 + 4 × 80 = 322 bytes at most, whatever the size of the record.
 * It is kept once per delivery in Redis (docs/similar.md, "Cost").
 */
import type { TermCounts } from './document-terms.js';

/** Terms kept per record. */
export const MAX_TERMS = 80;

/** Counts are kept in quarters, so a pair term (counting half) and title terms keep their weight. */
export const COUNT_STEP = 0.25;

const FORMAT_VERSION = 2;

/** Bytes of a stored term hash. */
const HASH_BYTES = 3;

export interface CompactDocument {
  /** Term hashes, ascending. */
  readonly hashes: Uint32Array;
  /** Each term's weighted count, in COUNT_STEPs, 1 to 255. */
  readonly counts: Uint8Array;
}

/**
 * Keeps the `maxTerms` terms that tell most about the record: the highest count times the term's
 * rarity (`rarity(hash)`, from the records seen before), ties to the lower hash so the choice
 * depends on nothing else.
 */
export function compactDocument(
  terms: TermCounts,
  rarity: (hash: number) => number,
  maxTerms = MAX_TERMS,
): CompactDocument {
  const folded = new Map<number, number>();
  for (const [hash, count] of terms) {
    const short = foldHash(hash);
    folded.set(short, (folded.get(short) ?? 0) + count);
  }
  let entries = [...folded].map(([hash, count]) => ({ hash, count, value: count * rarity(hash) }));
  if (entries.length > maxTerms) {
    entries.sort((a, b) => b.value - a.value || a.hash - b.hash);
    entries = entries.slice(0, maxTerms);
  }
  entries.sort((a, b) => a.hash - b.hash);
  return {
    hashes: Uint32Array.from(entries, (entry) => entry.hash),
    counts: Uint8Array.from(entries, (entry) => quantise(entry.count)),
  };
}

/** A term's 32-bit hash in 24 bits: its top byte folded into the others. */
export function foldHash(hash: number): number {
  return ((hash >>> 24) ^ hash) & 0xffffff;
}

function quantise(count: number): number {
  return Math.min(255, Math.max(1, Math.round(count / COUNT_STEP)));
}

export function encodeCompactDocument(document: CompactDocument): Uint8Array {
  const n = document.hashes.length;
  const bytes = new Uint8Array(2 + (HASH_BYTES + 1) * n);
  bytes[0] = FORMAT_VERSION;
  bytes[1] = n;
  for (let i = 0; i < n; i += 1) {
    const hash = document.hashes[i] as number;
    const at = 2 + HASH_BYTES * i;
    bytes[at] = hash & 0xff;
    bytes[at + 1] = (hash >>> 8) & 0xff;
    bytes[at + 2] = (hash >>> 16) & 0xff;
  }
  bytes.set(document.counts, 2 + HASH_BYTES * n);
  return bytes;
}

/** Reads what encodeCompactDocument wrote; throws a RangeError on anything else. */
export function decodeCompactDocument(bytes: Uint8Array): CompactDocument {
  const n = bytes[1] ?? 0;
  if (bytes[0] !== FORMAT_VERSION || bytes.length !== 2 + (HASH_BYTES + 1) * n || n > 255) {
    throw new RangeError('not a compact document of this version');
  }
  const hashes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) {
    const at = 2 + HASH_BYTES * i;
    hashes[i] = bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16);
  }
  return { hashes, counts: bytes.slice(2 + HASH_BYTES * n, 2 + (HASH_BYTES + 1) * n) };
}
