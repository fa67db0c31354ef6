/**
 * What is kept of a record for similarity: its most telling terms, at most MAX_TERMS of them, each
 * a 32-bit hash with its count quantised to a byte. Stored as bytes: a version, the number of
 * terms, the hashes (4 bytes each, little-endian) and the counts (1 byte each), 2 + 5 × 80 = 402
 * bytes at most, whatever the size of the record.
 */
import type { TermCounts } from './document-terms.js';

/** Terms kept per record. */
export const MAX_TERMS = 80;

/** Counts are kept in quarters, so a pair term (counting half) and title terms keep their weight. */
export const COUNT_STEP = 0.25;

const FORMAT_VERSION = 1;

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
  let entries = [...terms].map(([hash, count]) => ({ hash, count, value: count * rarity(hash) }));
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

function quantise(count: number): number {
  return Math.min(255, Math.max(1, Math.round(count / COUNT_STEP)));
}

export function encodeCompactDocument(document: CompactDocument): Uint8Array {
  const n = document.hashes.length;
  const bytes = new Uint8Array(2 + 5 * n);
  const view = new DataView(bytes.buffer);
  bytes[0] = FORMAT_VERSION;
  bytes[1] = n;
  for (let i = 0; i < n; i += 1) view.setUint32(2 + 4 * i, document.hashes[i] as number, true);
  bytes.set(document.counts, 2 + 4 * n);
  return bytes;
}

/** Reads what encodeCompactDocument wrote; throws a RangeError on anything else. */
export function decodeCompactDocument(bytes: Uint8Array): CompactDocument {
  const n = bytes[1] ?? 0;
  if (bytes[0] !== FORMAT_VERSION || bytes.length !== 2 + 5 * n || n > 255) {
    throw new RangeError('not a compact document of this version');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const hashes = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) hashes[i] = view.getUint32(2 + 4 * i, true);
  return { hashes, counts: bytes.slice(2 + 4 * n, 2 + 5 * n) };
}
