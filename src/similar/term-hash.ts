/**
 * A term as a 32-bit number (FNV-1a over its UTF-16 code units). Two terms of one project
 * colliding is rare (a project's few hundred thousand distinct terms against 4 billion values)
 * and costs only a little score, never correctness.
 */
export function termHash(term: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < term.length; i += 1) {
    hash ^= term.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
