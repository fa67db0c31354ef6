import { describe, expect, it } from 'vitest';
import { TermTable } from '../../src/similar/term-table.js';

describe('TermTable', () => {
  it('counts each term as a Map would, in the order first added, past its first room', () => {
    const table = new TermTable();
    const expected = new Map<number, number>();
    // Hashes of every range (0, past 2^31, alike in their low or high bits), each added thrice.
    const hashes = Array.from({ length: 3_000 }, (_, i) =>
      i % 3 === 0 ? (i << 20) >>> 0 : i % 3 === 1 ? (0xffffffff - i) >>> 0 : i,
    );
    for (let round = 1; round <= 3; round += 1) {
      for (const hash of hashes) {
        table.add(hash, round * 0.25);
        expected.set(hash, (expected.get(hash) ?? 0) + round * 0.25);
      }
    }
    expect(table.size).toBe(expected.size);
    const counts = table.counts();
    expect(Array.from(table.hashes(), (hash, i) => [hash, counts[i]])).toEqual([...expected]);
  });
});
