/**
 * An online index of compact documents, in arrival order, that answers "which earlier documents
 * is this one most like?" by TF-IDF cosine: sublinear term counts (1 + ln count) times smoothed
 * rarity (1 + ln((1 + n) / (1 + df))), over an inverted index, so a query touches only the
 * documents that share a term with it, and of those only each term's newest few hundred: its
 * work is bounded however alike the documents are. Scores are in [0, 1]; ties go to the earlier
 * document.
 *
 * Rarity changes as documents arrive, so each document's vector length is computed again for all
 * documents whenever the index has grown by a tenth (one pass over the postings, term by term in
 * ascending hash order, so each length is summed in its document's own order: the same number as
 * term by term within the document): a query's cost stays in proportion to the postings it
 * reads, and the result depends only on the documents added, in their order.
 */
import type { CompactDocument } from './compact-document.js';
import { COUNT_STEP } from './compact-document.js';

export interface SimilarMatch {
  /** The id the document was added with. */
  readonly id: string;
  /** Its position in arrival order, from 0. */
  readonly ordinal: number;
  /** Cosine similarity, 0 to 1. */
  readonly score: number;
}

/** How many best matches a query gives by default. */
export const DEFAULT_MATCH_LIMIT = 10;

/**
 * Postings read per query term at most: the term's newest in the range queried (postings are in
 * arrival order), so a query's work is bounded whatever the documents, even when every one is
 * alike and every term is in all of them. A term with more postings in the range still counts,
 * exactly, in the score of the SHORTLIST documents found best; a document that shares only such
 * terms with the query, and is older than their newest postings, is not found. 64, where it was
 * 256: the shared reports after 10 000 and 30 000 synthetic ones group and rank as well (or a
 * report better) with 64 as with 256 or with every posting read, and a query reads a quarter
 * (bench/similar-what-we-tried.md, "Eighth round").
 */
export const MOST_POSTINGS_PER_TERM = 64;

/**
 * Documents whose score is completed with the terms read only in part, at most: the best on what
 * was read. Each completion walks the document's sorted terms once. 50, where it was 200: the
 * 10 matches kept come from the first few dozen (the same figures as MOST_POSTINGS_PER_TERM's),
 * and completing was as costly as reading the postings.
 */
export const SHORTLIST = 50;

/** Growth (as a share of the size) after which every document's vector length is computed again. */
const NORM_REFRESH_GROWTH = 0.1;

/** A query's bounds (MOST_POSTINGS_PER_TERM and SHORTLIST by default): benches measure others. */
export interface QueryBounds {
  readonly postingsPerTerm?: number;
  readonly shortlist?: number;
}

/** Which documents a query looks at: ordinals from `from` (default 0) to before `before` (default all). */
export interface OrdinalRange {
  readonly from?: number;
  readonly before?: number;
}

/** What a query did: the measure of its work, bounded by the query's terms (see query). */
export interface QueryWork {
  /** Postings read, at most MOST_POSTINGS_PER_TERM per term of the query. */
  readonly postings: number;
  /** Terms looked up in a shortlisted document, at most SHORTLIST per term of the query. */
  readonly lookups: number;
}

interface Postings {
  readonly hash: number;
  docs: Int32Array;
  /** Each document's count of the term, in COUNT_STEPs (a byte: TERM_WEIGHT and POSTING_WEIGHT read it). */
  counts: Uint8Array;
  length: number;
}

export class SimilarityIndex {
  private readonly postings = new Map<number, Postings>();
  private readonly ids: string[] = [];
  private readonly documents: CompactDocument[] = [];
  private norms = new Float64Array(1024);
  private scores = new Float64Array(1024);
  private normsRefreshedAt = 0;
  /** Every term's postings in ascending hash order, as of the last refreshNorms. */
  private sortedTerms: Postings[] = [];
  /** The terms first added since. */
  private newTerms: Postings[] = [];
  private work: QueryWork = { postings: 0, lookups: 0 };
  private readonly postingsPerTerm: number;
  private readonly shortlistSize: number;

  constructor(bounds: QueryBounds = {}) {
    this.postingsPerTerm = bounds.postingsPerTerm ?? MOST_POSTINGS_PER_TERM;
    this.shortlistSize = bounds.shortlist ?? SHORTLIST;
  }

  /** What the last query did (tests check its bound). */
  get lastQueryWork(): QueryWork {
    return this.work;
  }

  get size(): number {
    return this.ids.length;
  }

  /** How many documents hold the term. */
  documentFrequency(hash: number): number {
    return this.postings.get(hash)?.length ?? 0;
  }

  /** The term's rarity weight now (see rarityOf). */
  rarity(hash: number): number {
    return rarityOf(this.size, this.documentFrequency(hash));
  }

  /** Adds a document after all those already added. */
  add(id: string, document: CompactDocument): void {
    const ordinal = this.ids.length;
    this.ids.push(id);
    this.documents.push(document);
    if (ordinal >= this.norms.length) {
      this.norms = grow(this.norms, ordinal + 1);
      this.scores = new Float64Array(this.norms.length);
    }
    // Its vector length: each term's weight (its rarity once it is added) squared, summed in the
    // document's order, as refreshNorms sums it.
    let sum = 0;
    for (let i = 0; i < document.hashes.length; i += 1) {
      const hash = document.hashes[i] as number;
      const count = document.counts[i] as number;
      let list = this.postings.get(hash);
      if (list === undefined) {
        list = { hash, docs: new Int32Array(4), counts: new Uint8Array(4), length: 0 };
        this.postings.set(hash, list);
        this.newTerms.push(list);
      }
      if (list.length === list.docs.length) {
        list.docs = grow(list.docs, list.length + 1);
        list.counts = grow(list.counts, list.length + 1);
      }
      list.docs[list.length] = ordinal;
      list.counts[list.length] = count;
      list.length += 1;
      const w = (TERM_WEIGHT[count] as number) * rarityOf(this.ids.length, list.length);
      sum += w * w;
    }
    if (this.size >= this.normsRefreshedAt * (1 + NORM_REFRESH_GROWTH) + 1) {
      this.refreshNorms();
      this.normsRefreshedAt = this.size;
    } else {
      this.norms[ordinal] = Math.sqrt(sum);
    }
  }

  /**
   * Every document's vector length with the rarities as they are now: one pass over the postings,
   * one rarity per term, the terms in ascending hash order, so that each document's sum adds its
   * terms in its own order (its hashes ascend), as add() does, and comes to the same number.
   */
  private refreshNorms(): void {
    const sums = new Float64Array(this.size);
    this.sortedTerms = mergeByHash(
      this.sortedTerms,
      this.newTerms.sort((a, b) => a.hash - b.hash),
    );
    this.newTerms = [];
    for (const { docs, counts, length } of this.sortedTerms) {
      const idf = rarityOf(this.size, length);
      for (let p = 0; p < length; p += 1) {
        const w = (TERM_WEIGHT[counts[p] as number] as number) * idf;
        const d = docs[p] as number;
        sums[d] = (sums[d] as number) + w * w;
      }
    }
    for (let d = 0; d < this.size; d += 1) this.norms[d] = Math.sqrt(sums[d] as number);
  }

  /**
   * The `limit` documents most like this one, best first, among those in `range`, leaving out
   * those that share no term with it. Its work is bounded whatever the index holds: at most
   * MOST_POSTINGS_PER_TERM postings read per term (each term's newest in the range) and SHORTLIST
   * lookups per term; the answer depends only on the documents added, in their order, and the
   * range, so every worker that holds the same documents computes the same.
   */
  query(
    document: CompactDocument,
    limit = DEFAULT_MATCH_LIMIT,
    range: OrdinalRange = {},
  ): SimilarMatch[] {
    this.work = { postings: 0, lookups: 0 };
    if (limit <= 0 || document.hashes.length === 0) return [];
    const from = Math.max(0, range.from ?? 0);
    const before = Math.min(this.size, range.before ?? this.size);
    const scores = this.scores;
    const touched: number[] = [];
    /**
     * Terms read only in part, in ascending hash order: documents older than a term's oldest
     * posting read still lack its share.
     */
    const terms = document.hashes.length;
    const partialHashes = new Uint32Array(terms);
    const partialWeights = new Float64Array(terms);
    const partialOldest = new Int32Array(terms);
    let partial = 0;
    let postingsRead = 0;
    // The query's vector length, summed as add() sums a document's, in the pass over its postings.
    let normSum = 0;
    for (let i = 0; i < terms; i += 1) {
      const hash = document.hashes[i] as number;
      const list = this.postings.get(hash);
      const idf = rarityOf(this.size, list === undefined ? 0 : list.length);
      const w = (TERM_WEIGHT[document.counts[i] as number] as number) * idf;
      normSum += w * w;
      if (list === undefined) continue;
      const queryWeight = w * idf;
      const { docs, counts } = list;
      const end = before >= this.size ? list.length : firstAtLeast(docs, list.length, before);
      const first = from === 0 ? 0 : firstAtLeast(docs, end, from);
      const start = Math.max(first, end - this.postingsPerTerm);
      if (start >= end) continue;
      if (start > first) {
        partialHashes[partial] = hash;
        partialWeights[partial] = queryWeight;
        partialOldest[partial] = docs[start] as number;
        partial += 1;
      }
      postingsRead += end - start;
      for (let p = start; p < end; p += 1) {
        const d = docs[p] as number;
        if (scores[d] === 0) touched.push(d);
        scores[d] =
          (scores[d] as number) + queryWeight * (POSTING_WEIGHT[counts[p] as number] as number);
      }
    }
    const queryNorm = Math.sqrt(normSum);
    const cosine = (d: number, dot: number) => {
      const norm = this.norms[d] as number;
      return norm === 0 ? 0 : Math.min(1, dot / (queryNorm * norm));
    };
    // Every term read whole: the scores are complete. Otherwise only the documents best on what
    // was read are completed: completing every document found would cost a lookup per document
    // and term read in part.
    const shortlist = new TopMatches(partial === 0 ? limit : Math.max(limit, this.shortlistSize));
    for (const d of touched) {
      shortlist.offer(d, cosine(d, scores[d] as number));
    }
    let lookups = 0;
    const best = partial === 0 ? shortlist : new TopMatches(limit);
    if (partial > 0) {
      for (const d of shortlist.kept()) {
        let dot = scores[d] as number;
        const candidate = this.documents[d]!;
        const { hashes } = candidate;
        // Both in ascending hash order: one walk through the document's terms finds them all.
        let at = 0;
        const held = hashes.length;
        for (let t = 0; t < partial; t += 1) {
          // A document at or after the term's oldest posting read was counted with it already.
          if (d >= (partialOldest[t] as number)) continue;
          lookups += 1;
          const hash = partialHashes[t] as number;
          while (at < held && (hashes[at] as number) < hash) at += 1;
          if (at < held && hashes[at] === hash) {
            dot +=
              (partialWeights[t] as number) *
              (TERM_WEIGHT[candidate.counts[at] as number] as number);
          }
        }
        best.offer(d, cosine(d, dot));
      }
    }
    for (const d of touched) scores[d] = 0;
    this.work = { postings: postingsRead, lookups };
    return best.sorted().map(({ ordinal, score }) => ({ id: this.ids[ordinal]!, ordinal, score }));
  }
}

/** Sublinear: the tenth "crash" in a report says less than the first. */
function termWeight(quantisedCount: number): number {
  const count = quantisedCount * COUNT_STEP;
  return count >= 1 ? 1 + Math.log(count) : count;
}

/** termWeight of each quantised count (a byte), computed once. */
const TERM_WEIGHT = Float64Array.from({ length: 256 }, (_, count) => termWeight(count));

/**
 * A posting's weight as a query multiplies it: termWeight in single precision, as postings kept
 * it when they stored weights, so scores stay the same to the last bit.
 */
const POSTING_WEIGHT = Float64Array.from(TERM_WEIGHT, (weight) => Math.fround(weight));

/**
 * Keeps the best `limit` (highest score, then earliest), without sorting all candidates: a heap
 * with the worst kept at its root, so a candidate costs one comparison when it is no better, and
 * log(limit) steps when it is. Highest score then earliest is a total order: which are kept, and
 * their order, depend only on the candidates, not on the order they come in.
 */
class TopMatches {
  private readonly ordinals: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  // Plain fields, not parameter properties: the examples run this file with Node's type
  // stripping (erasableSyntaxOnly), now that the worker's runtime imports it.
  constructor(limit: number) {
    this.ordinals = new Int32Array(limit);
    this.scores = new Float64Array(limit);
  }

  offer(ordinal: number, score: number): void {
    if (score <= 0) return;
    const { ordinals, scores } = this;
    let at: number;
    if (this.size < ordinals.length) {
      // Up from the end, while its parent is better (the worst at the root).
      at = this.size;
      this.size += 1;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!better(scores[parent]!, ordinals[parent]!, score, ordinal)) break;
        ordinals[at] = ordinals[parent]!;
        scores[at] = scores[parent]!;
        at = parent;
      }
    } else {
      if (!better(score, ordinal, scores[0]!, ordinals[0]!)) return;
      // In place of the worst, down while a child is worse.
      at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= this.size) break;
        const right = left + 1;
        const worse =
          right < this.size &&
          better(scores[left]!, ordinals[left]!, scores[right]!, ordinals[right]!)
            ? right
            : left;
        if (!better(score, ordinal, scores[worse]!, ordinals[worse]!)) break;
        ordinals[at] = ordinals[worse]!;
        scores[at] = scores[worse]!;
        at = worse;
      }
    }
    ordinals[at] = ordinal;
    scores[at] = score;
  }

  /** The ordinals kept, in no order. */
  kept(): Int32Array {
    return this.ordinals.subarray(0, this.size);
  }

  /** Those kept, best first. */
  sorted(): { ordinal: number; score: number }[] {
    const items = Array.from(this.kept(), (ordinal, i) => ({ ordinal, score: this.scores[i]! }));
    return items.sort((a, b) => (better(a.score, a.ordinal, b.score, b.ordinal) ? -1 : 1));
  }
}

/** Two lists of terms each in ascending hash order (no hash in both), as one. */
function mergeByHash(a: readonly Postings[], b: readonly Postings[]): Postings[] {
  const merged: Postings[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) merged.push(a[i]!.hash < b[j]!.hash ? a[i++]! : b[j++]!);
  while (i < a.length) merged.push(a[i++]!);
  while (j < b.length) merged.push(b[j++]!);
  return merged;
}

/** The first position in ascending `docs[0 .. length)` whose value is at least `value`. */
function firstAtLeast(docs: Int32Array, length: number, value: number): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((docs[middle] as number) < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

function better(score: number, ordinal: number, otherScore: number, otherOrdinal: number): boolean {
  return score > otherScore || (score === otherScore && ordinal < otherOrdinal);
}

function grow<T extends Int32Array | Uint8Array | Float64Array>(array: T, atLeast: number): T {
  const next = new (array.constructor as new (length: number) => T)(
    Math.max(atLeast, array.length * 2),
  );
  next.set(array);
  return next;
}

/** A term's rarity weight among `documents`, `holding` of which have it: 1 + ln((1 + n) / (1 + df)). */
export function rarityOf(documents: number, holding: number): number {
  return 1 + Math.log((1 + documents) / (1 + holding));
}
