/**
 * A record's terms with their weighted counts, gathered in typed arrays (open addressing over
 * the entries, kept in the order they were first added). A Map of 32-bit hashes to fractional
 * counts boxes a number at most adds (a hash past 2^30 and a count like 0.25 are no small
 * integers), and a record makes a thousand or so adds: grouping makes one record's terms per
 * delivery, so this is most of what tokenising cost (bench/similar-what-we-tried.md, eighth round).
 */

/** Entries a table starts with room for: a short report's distinct terms. */
const INITIAL_ENTRIES = 256;

/** Fibonacci hashing's multiplier (2^32 / golden ratio): spreads any bits of a hash to the top. */
const SPREAD = 0x9e3779b1;

export class TermTable {
  private entryHashes = new Uint32Array(INITIAL_ENTRIES);
  private entryCounts = new Float64Array(INITIAL_ENTRIES);
  /** Each slot's entry + 1, 0 for an empty slot; twice the entries' room, so probes stay short. */
  private slots = new Int32Array(2 * INITIAL_ENTRIES);
  private entries = 0;
  /** 32 less the bits of a slot: a slot is the top bits of the hash times a constant. */
  private shift = 32 - Math.log2(2 * INITIAL_ENTRIES);

  get size(): number {
    return this.entries;
  }

  /** Adds `weight` to the term's count (a new term starts at 0). */
  add(hash: number, weight: number): void {
    const mask = this.slots.length - 1;
    let slot = Math.imul(hash, SPREAD) >>> this.shift;
    for (;;) {
      const entry = this.slots[slot]!;
      if (entry === 0) break;
      if (this.entryHashes[entry - 1] === hash) {
        this.entryCounts[entry - 1] = this.entryCounts[entry - 1]! + weight;
        return;
      }
      slot = (slot + 1) & mask;
    }
    if (this.entries === this.entryHashes.length) {
      this.grow();
      this.add(hash, weight);
      return;
    }
    this.entryHashes[this.entries] = hash;
    this.entryCounts[this.entries] = weight;
    this.entries += 1;
    this.slots[slot] = this.entries;
  }

  /** The terms' hashes, in the order first added (a view, valid until the next add). */
  hashes(): Uint32Array {
    return this.entryHashes.subarray(0, this.entries);
  }

  /** Their counts, in the same order (a view, valid until the next add). */
  counts(): Float64Array {
    return this.entryCounts.subarray(0, this.entries);
  }

  private grow(): void {
    const room = 2 * this.entryHashes.length;
    const hashes = new Uint32Array(room);
    hashes.set(this.entryHashes);
    const counts = new Float64Array(room);
    counts.set(this.entryCounts);
    this.entryHashes = hashes;
    this.entryCounts = counts;
    this.slots = new Int32Array(2 * room);
    this.shift -= 1;
    const mask = this.slots.length - 1;
    for (let entry = 0; entry < this.entries; entry += 1) {
      let slot = Math.imul(hashes[entry]!, SPREAD) >>> this.shift;
      while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
      this.slots[slot] = entry + 1;
    }
  }
}
