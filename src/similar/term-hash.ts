/**
 * A term as a 32-bit number (FNV-1a over its UTF-16 code units). Two terms of one project
 * colliding is rare (a project's few hundred thousand distinct terms against 4 billion values)
 * and costs only a little score, never correctness. What a record keeps is this folded to 22 bits
 * (compact-document.ts), where terms meet more often (7% of 300 000, 21% of a million) and still
 * cost little: docs/similar.md, "Cost".
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export function termHash(term: string): number {
  return hashOnward(FNV_OFFSET, term, 0, term.length) >>> 0;
}

/** Where a hash made of parts starts (see hashOnward). */
export const TERM_HASH_START = FNV_OFFSET;

/**
 * A term's hash made of parts without joining them into a string (tokenising makes many terms):
 * start from TERM_HASH_START, go on with each part (`text`'s code units from `from` to before
 * `to`), and end with `>>> 0`, for the number `termHash` gives the parts joined.
 */
export function hashOnward(hash: number, text: string, from: number, to: number): number {
  let h = hash;
  for (let i = from; i < to; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** Bits of a term hash as a compact document keeps it (compact-document.ts). */
export const KEPT_HASH_BITS = 22;

/**
 * A term's 32-bit hash in KEPT_HASH_BITS: its top byte folded into the others (the 24 bits
 * versions 2 and 3 of a compact document kept), then their top 2 bits into the rest, so a hash
 * those versions stored folds the same. A folded hash folds to itself.
 */
export function foldHash(hash: number): number {
  return narrowHash(((hash >>> 24) ^ hash) & 0xffffff);
}

/** A 24-bit hash of compact documents' versions 2 and 3 in KEPT_HASH_BITS. */
export function narrowHash(wide: number): number {
  return (wide ^ (wide >>> KEPT_HASH_BITS)) & ((1 << KEPT_HASH_BITS) - 1);
}
