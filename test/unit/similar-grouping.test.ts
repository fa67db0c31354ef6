import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  compactDocument,
  compactTerms,
  decodeCompactDocument,
  encodeCompactDocument,
  foldHash,
  MAX_TERMS,
} from '../../src/similar/compact-document.js';
import { documentTerms, recordTerms } from '../../src/similar/document-terms.js';
import type { SimilarRecord } from '../../src/similar/considered-text.js';
import { bestGroup, chooseGroup, groupEvidence } from '../../src/similar/grouping.js';
import { BitWriter } from '../../src/similar/rice-code.js';
import { SimilarGrouper } from '../../src/similar/similar-grouper.js';
import { longReport } from '../helpers/long-report.js';
import {
  MOST_POSTINGS_PER_TERM,
  SHORTLIST,
  type SimilarityIndex,
} from '../../src/similar/similarity-index.js';

interface Row {
  group: string;
  record: SimilarRecord & { id: string };
}

/** The first 120 reports of webapp-650 (MIT, BugSpotter; see the fixture's NOTICE). */
const rows: Row[] = readFileSync(
  new URL('../fixtures/similar-webapp-200.jsonl', import.meta.url),
  'utf8',
)
  .trim()
  .split('\n')
  .slice(0, 120)
  .map((line) => JSON.parse(line) as Row);

function replay(input: Row[]) {
  const grouper = new SimilarGrouper();
  return input.map(({ record }) => ({ id: record.id, ...grouper.add(record.id, record) }));
}

describe('SimilarGrouper on real reports', () => {
  const outcomes = replay(rows);
  const trueGroup = new Map(rows.map((row) => [row.record.id, row.group]));

  it('ranks a known duplicate first for nearly every report that has one', () => {
    const seen = new Set<string>();
    let withEarlier = 0;
    let firstIsDuplicate = 0;
    rows.forEach((row, i) => {
      if (seen.has(row.group)) {
        withEarlier += 1;
        const best = outcomes[i]!.matches[0];
        if (best !== undefined && trueGroup.get(best.id) === row.group) firstIsDuplicate += 1;
      }
      seen.add(row.group);
    });
    expect(withEarlier).toBe(56);
    expect(firstIsDuplicate).toBeGreaterThanOrEqual(52);
  });

  it('never puts reports of two different problems in one group', () => {
    const membersOf = new Map<string, Set<string>>();
    rows.forEach((row, i) => {
      const formed = outcomes[i]!.group;
      membersOf.set(formed, (membersOf.get(formed) ?? new Set()).add(row.group));
    });
    const mixed = [...membersOf.values()].filter((groups) => groups.size > 1);
    expect(mixed).toEqual([]);
    // And it does group: far fewer groups than reports.
    expect(membersOf.size).toBeLessThan(100);
  });

  it('gives scores between 0 and 1, best first, at most 10, only earlier reports', () => {
    outcomes.forEach((outcome, i) => {
      expect(outcome.matches.length).toBeLessThanOrEqual(10);
      const earlier = new Set(outcomes.slice(0, i).map((o) => o.id));
      outcome.matches.forEach((match, m) => {
        expect(earlier.has(match.id)).toBe(true);
        expect(match.score).toBeGreaterThan(0);
        expect(match.score).toBeLessThanOrEqual(1);
        if (m > 0) expect(match.score).toBeLessThanOrEqual(outcome.matches[m - 1]!.score);
      });
    });
  });

  it('gives the same matches, scores and groups when the same reports are replayed', () => {
    const again = replay(rows);
    expect(again.map(({ matches, group }) => ({ matches, group }))).toEqual(
      outcomes.map(({ matches, group }) => ({ matches, group })),
    );
  });
});

describe('SimilarGrouper', () => {
  const report = { title: 'Pay button stays grey', description: 'Nothing happens on checkout' };

  it('scores an identical report 1 and breaks ties by earlier arrival', () => {
    const grouper = new SimilarGrouper();
    grouper.add('a', report);
    grouper.add('b', report);
    const outcome = grouper.add('c', report);
    expect(outcome.matches.map((m) => m.id)).toEqual(['a', 'b']);
    expect(outcome.matches[0]!.score).toBeCloseTo(1, 6);
    expect(outcome.group).toBe('a');
  });

  it('keeps copies of a report longer than MAX_TERMS terms in one group, alike or but a word apart', () => {
    // Past some sixty copies, a rarity counted over records made a copy keep other terms.
    const copies = 300;
    for (const orderOf of [() => 1, (i: number) => i]) {
      const grouper = new SimilarGrouper();
      const groups = new Map<string, number>();
      for (let i = 0; i < copies; i += 1) {
        const { group, document } = grouper.add(`r${i}`, longReport(orderOf(i)));
        expect(document.hashes).toHaveLength(MAX_TERMS);
        groups.set(group, (groups.get(group) ?? 0) + 1);
      }
      expect([...groups]).toEqual([['r0', copies]]);
    }
  });

  it('starts a new group for a report that shares no term with earlier ones', () => {
    const grouper = new SimilarGrouper();
    grouper.add('a', report);
    const outcome = grouper.add('b', { title: 'Dark mode colours', description: 'Too bright' });
    expect(outcome.matches).toEqual([]);
    expect(outcome.group).toBe('b');
  });

  it('groups an empty report with nothing', () => {
    const grouper = new SimilarGrouper();
    grouper.add('a', { title: '' });
    expect(grouper.add('b', { title: '' })).toMatchObject({ matches: [], group: 'b' });
  });

  it('compares hostile reports within the same bound', () => {
    const grouper = new SimilarGrouper();
    const hostile: SimilarRecord[] = [
      { title: 'x'.repeat(1_000_000), description: 'checkout '.repeat(200_000) },
      { title: '😡\u0000\u0007\u202e', description: 'زر الدفع لا يعمل 支付按钮不工作' },
      { title: '', description: '\ud800'.repeat(10_000) },
    ];
    hostile.forEach((record, i) => {
      const outcome = grouper.add(`h${i}`, record);
      expect(encodeCompactDocument(outcome.document).byteLength).toBeLessThanOrEqual(269);
    });
    expect(grouper.add('h3', { description: '支付按钮不工作' }).matches[0]?.id).toBe('h1');
  });
});

describe('SimilarityIndex', () => {
  /** A report of fewer than 80 terms: every copy keeps them all, so copies are identical. */
  const alike = { title: 'Pay button stays grey', description: 'Nothing happens on checkout' };
  const copies = 4 * MOST_POSTINGS_PER_TERM + 600;

  it('bounds the work of a query however many documents share its terms', () => {
    const grouper = new SimilarGrouper();
    for (let i = 0; i < copies; i += 1) grouper.add(`r${i}`, alike);
    const outcome = grouper.add('q', alike);
    const terms = outcome.document.hashes.length;
    const work = grouper.index.lastQueryWork;
    expect(work.postings).toBeGreaterThan(0);
    expect(work.postings).toBeLessThanOrEqual(terms * MOST_POSTINGS_PER_TERM);
    expect(work.lookups).toBeLessThanOrEqual(terms * SHORTLIST);
    expect(outcome.matches[0]!.score).toBeCloseTo(1, 6);
  });

  it('puts many identical reports in one group, past the postings a query reads', () => {
    const grouper = new SimilarGrouper();
    const groups = new Map<string, number>();
    for (let i = 0; i < copies; i += 1) {
      const { group } = grouper.add(`r${i}`, alike);
      groups.set(group, (groups.get(group) ?? 0) + 1);
    }
    expect([...groups]).toEqual([['r0', copies]]);
  });

  it('looks only at the documents in the range asked, the newest of each term first', () => {
    const grouper = new SimilarGrouper();
    for (let i = 0; i < copies; i += 1) grouper.add(`r${i}`, alike);
    const { document } = grouper.add('q', alike);
    const index: SimilarityIndex = grouper.index;
    // Every copy scores 1: ties go to the earliest read, so the window is what the range says.
    const before = index.query(document, 3, { before: 700 }).map((m) => m.ordinal);
    expect(before).toEqual([
      700 - MOST_POSTINGS_PER_TERM,
      701 - MOST_POSTINGS_PER_TERM,
      702 - MOST_POSTINGS_PER_TERM,
    ]);
    expect(index.query(document, 3, { from: 650, before: 700 }).map((m) => m.ordinal)).toEqual([
      650, 651, 652,
    ]);
  });

  it('still scores a term held by most documents, exactly, once a rarer term finds them', () => {
    const grouper = new SimilarGrouper();
    for (let i = 0; i < 1_500; i += 1) {
      grouper.add(`r${i}`, { title: `checkout broken ${i.toString(36)}zz` });
    }
    const outcome = grouper.add('q', { title: `checkout broken ${(700).toString(36)}zz` });
    expect(outcome.matches[0]).toMatchObject({ id: 'r700' });
    expect(outcome.matches[0]!.score).toBeCloseTo(1, 6);
  });
});

describe('compact documents', () => {
  it('keep the same terms told the range of the rarity, reading the rarity of fewer', () => {
    // As choiceRarityRange gives among 10 000 documents, near enough: 7.16 to 10.21.
    const range = { least: 7, most: 10 };
    // Seeded: each term's rarity the least, the most, or between, as the hash says.
    const rarity = (hash: number) => {
      const pick = Math.imul(hash, 0x9e3779b1) >>> 0;
      return pick % 3 === 0 ? range.least : pick % 3 === 1 ? range.most : 7 + (pick % 1000) / 333;
    };
    let read = 0;
    let terms = 0;
    for (const { record } of rows) {
      const folded = recordTerms(record, undefined, true);
      terms += folded.size;
      const counted = (hash: number) => {
        read += 1;
        return rarity(hash);
      };
      const told = compactTerms(folded, counted, MAX_TERMS, range);
      expect(told).toEqual(compactTerms(folded, rarity));
      expect(told).toEqual(compactDocument(documentTerms(record), rarity));
    }
    expect(read).toBeLessThan(terms * 0.7);
  });

  it('round-trip through bytes of at most 269, each hash in 22 bits', () => {
    const grouper = new SimilarGrouper();
    for (const { record } of rows) {
      const { document } = grouper.add(record.id, record);
      const bytes = encodeCompactDocument(document);
      expect(bytes.byteLength).toBeLessThanOrEqual(269);
      expect(document.hashes.every((hash) => hash < 2 ** 22)).toBe(true);
      expect(decodeCompactDocument(bytes)).toEqual(document);
    }
  });

  it('code 80 terms of a real report in far fewer bytes than 3 + 1 each', () => {
    const grouper = new SimilarGrouper();
    const sizes = rows.map(({ record }) => {
      const { document } = grouper.add(record.id, record);
      return { terms: document.hashes.length, bytes: encodeCompactDocument(document).byteLength };
    });
    const full = sizes.filter(({ terms }) => terms === 80);
    expect(full.length).toBeGreaterThan(10);
    // 322 in version 2, 240 in version 3; the gaps of 80 hashes in 2^22 take some 17 bits each.
    expect(Math.max(...full.map(({ bytes }) => bytes))).toBeLessThanOrEqual(220);
  });

  it('keep within the bound for the worst hashes and counts', () => {
    const spread = Uint32Array.from({ length: 80 }, (_, i) => i * 52_428);
    const worst = { hashes: spread, counts: new Uint8Array(80).fill(255) };
    const bytes = encodeCompactDocument(worst);
    expect(bytes.byteLength).toBeLessThanOrEqual(269);
    expect(decodeCompactDocument(bytes)).toEqual(worst);
    const edges = {
      hashes: Uint32Array.from([0, 1, 2 ** 22 - 1]),
      counts: Uint8Array.from([1, 255, 7]),
    };
    expect(decodeCompactDocument(encodeCompactDocument(edges))).toEqual(edges);
    const empty = { hashes: new Uint32Array(), counts: new Uint8Array() };
    expect(decodeCompactDocument(encodeCompactDocument(empty))).toEqual(empty);
  });

  it('code values whose mean is under a half (a short report, mostly word pieces)', () => {
    // Counts of a quarter are coded as 0: one word of 1 among its pieces of a quarter each.
    const pieces = {
      hashes: Uint32Array.from({ length: 18 }, (_, i) => i * 1_000),
      counts: Uint8Array.from({ length: 18 }, (_, i) => (i === 0 ? 4 : 1)),
    };
    expect(decodeCompactDocument(encodeCompactDocument(pieces))).toEqual(pieces);
    // Hashes close together: gaps of 0 and 1.
    const close = { hashes: Uint32Array.from([0, 1, 3]), counts: Uint8Array.from([4, 4, 4]) };
    expect(decodeCompactDocument(encodeCompactDocument(close))).toEqual(close);
  });

  it('round-trip any set of hashes and counts, within the bound (seeded random shapes)', () => {
    // mulberry32: the same shapes every run, so a failure names its case.
    let seed = 0x5eed;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
    for (let round = 0; round < 2_000; round += 1) {
      const n = Math.floor(random() * 81);
      // Hashes spread over the whole range, or crowded into a narrow one (gaps of 0 and 1).
      const width = Math.max(n, Math.floor(2 ** (random() * 22)));
      const base = Math.floor(random() * (2 ** 22 - width));
      const hashes = new Set<number>();
      while (hashes.size < n) hashes.add(base + Math.floor(random() * width));
      const most = 1 + Math.floor(random() * 255);
      const document = {
        hashes: Uint32Array.from([...hashes].sort((a, b) => a - b)),
        counts: Uint8Array.from({ length: n }, () => 1 + Math.floor(random() * most)),
      };
      const bytes = encodeCompactDocument(document);
      expect(bytes.byteLength, `round ${round}`).toBeLessThanOrEqual(269);
      expect(decodeCompactDocument(bytes), `round ${round}`).toEqual(document);
    }
  });

  it('still read version 2, each hash in 3 bytes and each count in 1 (a stream written before)', () => {
    // 24-bit hashes 0x000102 and 0xabcdef, little-endian, then counts 4 and 8: read in 22 bits,
    // the top 2 bits folded into the rest as foldHash does (0xabcdef: 0x2bcdef ^ 2).
    const version2 = Uint8Array.from([2, 2, 0x02, 0x01, 0x00, 0xef, 0xcd, 0xab, 4, 8]);
    expect(decodeCompactDocument(version2)).toEqual({
      hashes: Uint32Array.from([0x000102, 0x2bcded]),
      counts: Uint8Array.from([4, 8]),
    });
    // 0x400103 folds onto 0x000102: one term, its counts added.
    const meeting = Uint8Array.from([2, 2, 0x02, 0x01, 0x00, 0x03, 0x01, 0x40, 4, 8]);
    expect(decodeCompactDocument(meeting)).toEqual({
      hashes: Uint32Array.from([0x000102]),
      counts: Uint8Array.from([12]),
    });
  });

  it('still read version 3, Rice-coded 24-bit hashes, folded to 22 bits as they are read', () => {
    // 24-bit hashes 0x000102, 0x400103 (which folds onto 0x000102) and 0xabcdef, counts 4, 8
    // and 250, written as version 3 did: gaps with k = 20, counts less one with k = 7.
    const hashes = [0x000102, 0x400103, 0xabcdef];
    const bits = new BitWriter(3 * 24 + 3 * 9);
    hashes.forEach((hash, i) => bits.writeRice(i === 0 ? hash : hash - hashes[i - 1]! - 1, 20));
    for (const count of [4, 8, 250]) bits.writeRice(count - 1, 7);
    const version3 = Uint8Array.from([3, 3, 20 | (7 << 5), ...bits.finish()]);
    expect(decodeCompactDocument(version3)).toEqual({
      hashes: Uint32Array.from([0x000102, 0x2bcded]),
      counts: Uint8Array.from([12, 250]),
    });
  });

  it('fold a term the same whichever version stored it', () => {
    for (const hash of [0, 0xffffffff, 0x9e3779b9, 0x01abcdef]) {
      const wide = ((hash >>> 24) ^ hash) & 0xffffff;
      const version2 = Uint8Array.from([2, 1, wide & 0xff, (wide >> 8) & 0xff, wide >> 16, 4]);
      expect(decodeCompactDocument(version2).hashes).toEqual(Uint32Array.from([foldHash(hash)]));
      expect(foldHash(hash)).toBeLessThan(2 ** 22);
    }
  });

  it('refuses bytes of another format', () => {
    expect(() => decodeCompactDocument(new Uint8Array([3, 0]))).toThrow(RangeError);
    expect(() => decodeCompactDocument(new Uint8Array([5, 0, 0]))).toThrow(RangeError);
    // Version 4 with a hashes' Rice parameter of 22 bits or more.
    expect(() => decodeCompactDocument(new Uint8Array([4, 0, 22]))).toThrow(RangeError);
    // The first version: 32-bit hashes.
    expect(() => decodeCompactDocument(new Uint8Array([1, 1, 0, 0, 0, 0, 4]))).toThrow(RangeError);
    expect(() => decodeCompactDocument(new Uint8Array([2, 3, 0]))).toThrow(RangeError);
    // Version 4 cut short, and with bytes after its end.
    const bytes = encodeCompactDocument({
      hashes: Uint32Array.from([5, 900, 70_000]),
      counts: Uint8Array.from([4, 2, 8]),
    });
    expect(() => decodeCompactDocument(bytes.subarray(0, bytes.length - 1))).toThrow(RangeError);
    expect(() => decodeCompactDocument(Uint8Array.from([...bytes, 0]))).toThrow(RangeError);
  });
});

describe('chooseGroup', () => {
  const match = (id: string, score: number) => ({ id, ordinal: 0, score });

  it("joins the best match's group at the threshold, not below it", () => {
    expect(chooseGroup([match('a', 0.35)], (m) => `g-${m.id}`, 0.35)).toBe('g-a');
    expect(chooseGroup([match('a', 0.34)], (m) => `g-${m.id}`, 0.35)).toBeUndefined();
    expect(chooseGroup([], (m) => m.id, 0)).toBeUndefined();
  });

  it("adds half a group's second-best member to its best, and joins the group with most", () => {
    const groups: Record<string, string> = { a: 'A', b1: 'B', b2: 'B', b3: 'B' };
    const groupOf = (m: { id: string }) => groups[m.id]!;
    // A alone: 0.40, short of 0.425. B: 0.35 + 0.5 × 0.30 = 0.50 (its third member adds nothing).
    const matches = [match('a', 0.4), match('b1', 0.35), match('b2', 0.3), match('b3', 0.29)];
    const evidenceOnly = (threshold: number, secondWeight?: number) =>
      chooseGroup(matches, groupOf, threshold, secondWeight, 0);
    expect(evidenceOnly(0.425)).toBe('B');
    expect(evidenceOnly(0.51)).toBeUndefined();
    expect(chooseGroup([match('a', 0.4)], groupOf, 0.425)).toBeUndefined();
    // With no weight on the second member, the rule is the best match at the threshold.
    expect(evidenceOnly(0.4, 0)).toBe('A');
  });

  it('takes half the mean score of the matches outside the group off its evidence', () => {
    const groupOf = (m: { id: string }) => m.id[0]!;
    // a: 0.5 + 0.5 × 0.4 = 0.7; outside it b and c, mean 0.3: confidence 0.7 − 0.15 = 0.55.
    const matches = [match('a1', 0.5), match('a2', 0.4), match('b1', 0.35), match('c1', 0.25)];
    const best = bestGroup(matches, groupOf)!;
    expect(best.group).toBe('a');
    expect(best.evidence).toBeCloseTo(0.7, 9);
    expect(best.confidence).toBeCloseTo(0.55, 9);
    expect(chooseGroup(matches, groupOf, 0.54)).toBe('a');
    expect(chooseGroup(matches, groupOf, 0.56)).toBeUndefined();
    // A report that scores alike against everything has little confidence in any group.
    const flat = ['a', 'b', 'c', 'd', 'e'].map((id) => match(id, 0.3));
    expect(bestGroup(flat, groupOf)?.confidence).toBeCloseTo(0.15, 9);
  });

  it('gives each group its evidence, at most 1, whatever the order of the matches', () => {
    const groupOf = (m: { id: string }) => m.id[0]!;
    const evidence = groupEvidence(
      [match('b1', 0.2), match('a1', 0.9), match('a2', 0.8), match('b2', 0.6)],
      groupOf,
    );
    expect([...evidence]).toEqual([
      ['b', 0.6 + 0.5 * 0.2],
      ['a', 1],
    ]);
  });
});
