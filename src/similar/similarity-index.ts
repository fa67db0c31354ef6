/**
 * An online index of compact documents, in arrival order, that answers "which earlier documents
 * is this one most like?" by TF-IDF cosine: sublinear term counts (1 + ln count) times smoothed
 * rarity (1 + ln((1 + n) / (1 + df))), over an inverted index, so a query touches only the
 * documents that share a term with it, and of those only each term's newest few hundred: its
 * work is bounded however alike the documents are. Scores are in [0, 1]; ties go to the earlier
 * document.
 *
 * Rarity changes as documents arrive, so each document's vector length is computed again for all
 * documents whenever the index has grown by a tenth: a query's cost stays in proportion to the
 * postings it reads, and the result depends only on the documents added, in their order.
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
 * terms with the query, and is older than their newest postings, is not found.
 */
export const MOST_POSTINGS_PER_TERM = 256;

/**
 * Documents whose score is completed with the terms read only in part, at most: the best on what
 * was read. Each completion looks each such term up in the document's sorted terms.
 */
export const SHORTLIST = 200;

/** Growth (as a share of the size) after which every document's vector length is computed again. */
const NORM_REFRESH_GROWTH = 0.1;

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
  docs: Int32Array;
  weights: Float32Array;
  length: number;
}

export class SimilarityIndex {
  private readonly postings = new Map<number, Postings>();
  private readonly ids: string[] = [];
  private readonly documents: CompactDocument[] = [];
  private norms = new Float64Array(1024);
  private scores = new Float64Array(1024);
  private normsRefreshedAt = 0;
  private work: QueryWork = { postings: 0, lookups: 0 };

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
    for (let i = 0; i < document.hashes.length; i += 1) {
      const hash = document.hashes[i] as number;
      let list = this.postings.get(hash);
      if (list === undefined) {
        list = { docs: new Int32Array(4), weights: new Float32Array(4), length: 0 };
        this.postings.set(hash, list);
      }
      if (list.length === list.docs.length) {
        list.docs = grow(list.docs, list.length + 1);
        list.weights = grow(list.weights, list.length + 1);
      }
      list.docs[list.length] = ordinal;
      list.weights[list.length] = termWeight(document.counts[i] as number);
      list.length += 1;
    }
    if (this.size >= this.normsRefreshedAt * (1 + NORM_REFRESH_GROWTH) + 1) {
      for (let d = 0; d < this.size; d += 1) this.norms[d] = this.norm(this.documents[d]!);
      this.normsRefreshedAt = this.size;
    } else {
      this.norms[ordinal] = this.norm(document);
    }
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
    const queryNorm = this.norm(document);
    if (queryNorm === 0 || limit <= 0) return [];
    const from = Math.max(0, range.from ?? 0);
    const before = Math.min(this.size, range.before ?? this.size);
    const scores = this.scores;
    const touched: number[] = [];
    /** Terms read only in part: documents older than `oldestRead` still lack their share. */
    const partial: { hash: number; queryWeight: number; oldestRead: number }[] = [];
    let postingsRead = 0;
    for (let i = 0; i < document.hashes.length; i += 1) {
      const hash = document.hashes[i] as number;
      const list = this.postings.get(hash);
      if (list === undefined) continue;
      const idf = this.rarity(hash);
      const queryWeight = termWeight(document.counts[i] as number) * idf * idf;
      const { docs, weights } = list;
      const end = before >= this.size ? list.length : firstAtLeast(docs, list.length, before);
      const first = from === 0 ? 0 : firstAtLeast(docs, end, from);
      const start = Math.max(first, end - MOST_POSTINGS_PER_TERM);
      if (start >= end) continue;
      if (start > first) partial.push({ hash, queryWeight, oldestRead: docs[start] as number });
      postingsRead += end - start;
      for (let p = start; p < end; p += 1) {
        const d = docs[p] as number;
        if (scores[d] === 0) touched.push(d);
        scores[d] = (scores[d] as number) + queryWeight * (weights[p] as number);
      }
    }
    const cosine = (d: number, dot: number) => {
      const norm = this.norms[d] as number;
      return norm === 0 ? 0 : Math.min(1, dot / (queryNorm * norm));
    };
    // Every term read whole: the scores are complete. Otherwise only the documents best on what
    // was read are completed: completing every document found would cost a lookup per document
    // and term read in part.
    const shortlist = new TopMatches(partial.length === 0 ? limit : Math.max(limit, SHORTLIST));
    for (const d of touched) {
      shortlist.offer(d, cosine(d, scores[d] as number));
    }
    let lookups = 0;
    const best = partial.length === 0 ? shortlist : new TopMatches(limit);
    if (partial.length > 0) {
      for (const { ordinal: d } of shortlist.sorted()) {
        let dot = scores[d] as number;
        const candidate = this.documents[d]!;
        for (const { hash, queryWeight, oldestRead } of partial) {
          // A document at or after the term's oldest posting read was counted with it already.
          if (d >= oldestRead) continue;
          lookups += 1;
          const at = indexOf(candidate.hashes, hash);
          if (at !== -1) dot += queryWeight * termWeight(candidate.counts[at] as number);
        }
        best.offer(d, cosine(d, dot));
      }
    }
    for (const d of touched) scores[d] = 0;
    this.work = { postings: postingsRead, lookups };
    return best.sorted().map(({ ordinal, score }) => ({ id: this.ids[ordinal]!, ordinal, score }));
  }

  private norm(document: CompactDocument): number {
    let sum = 0;
    for (let i = 0; i < document.hashes.length; i += 1) {
      const w =
        termWeight(document.counts[i] as number) * this.rarity(document.hashes[i] as number);
      sum += w * w;
    }
    return Math.sqrt(sum);
  }
}

/** Sublinear: the tenth "crash" in a report says less than the first. */
function termWeight(quantisedCount: number): number {
  const count = quantisedCount * COUNT_STEP;
  return count >= 1 ? 1 + Math.log(count) : count;
}

/** Keeps the best `limit` (highest score, then earliest), without sorting all candidates. */
class TopMatches {
  private readonly items: { ordinal: number; score: number }[] = [];
  private readonly limit: number;

  // A plain field, not a parameter property: the examples run this file with Node's type
  // stripping (erasableSyntaxOnly), now that the worker's runtime imports it.
  constructor(limit: number) {
    this.limit = limit;
  }

  offer(ordinal: number, score: number): void {
    if (score <= 0) return;
    if (this.items.length === this.limit) {
      const worst = this.items[this.items.length - 1]!;
      if (!better(score, ordinal, worst.score, worst.ordinal)) return;
      this.items.pop();
    }
    let at = this.items.length;
    while (at > 0 && better(score, ordinal, this.items[at - 1]!.score, this.items[at - 1]!.ordinal))
      at -= 1;
    this.items.splice(at, 0, { ordinal, score });
  }

  sorted(): { ordinal: number; score: number }[] {
    return this.items;
  }
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

/** Position of `hash` in ascending `hashes`, or -1. */
function indexOf(hashes: Uint32Array, hash: number): number {
  let low = 0;
  let high = hashes.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const value = hashes[middle] as number;
    if (value === hash) return middle;
    if (value < hash) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

function better(score: number, ordinal: number, otherScore: number, otherOrdinal: number): boolean {
  return score > otherScore || (score === otherScore && ordinal < otherOrdinal);
}

function grow<T extends Int32Array | Float32Array | Float64Array>(array: T, atLeast: number): T {
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
