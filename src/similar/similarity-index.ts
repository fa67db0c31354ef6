/**
 * An online index of compact documents, in arrival order, that answers "which earlier documents
 * is this one most like?" by TF-IDF cosine: sublinear term counts (1 + ln count) times smoothed
 * rarity (1 + ln((1 + n) / (1 + df))), over an inverted index, so a query touches only the
 * documents that share a term with it. Scores are in [0, 1]; ties go to the earlier document.
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
 * A term held by more documents than this (a share of all, and at least the floor) is too common
 * to find candidates by: reading its postings would cost a pass over most of the index for a term
 * that says little. It still counts, exactly, in the score of the SHORTLIST documents found best
 * through rarer terms; a document that shares only such terms with the query is not a match.
 */
const COMMON_TERM_SHARE = 0.01;
const COMMON_TERM_FLOOR = 1_000;

/** Documents completed with the common terms' share, at most: the best on the rarer terms. */
const SHORTLIST = 200;

/** Growth (as a share of the size) after which every document's vector length is computed again. */
const NORM_REFRESH_GROWTH = 0.1;

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
   * The `limit` documents most like this one, best first, leaving out those that share no term
   * with it.
   */
  query(document: CompactDocument, limit = DEFAULT_MATCH_LIMIT): SimilarMatch[] {
    const queryNorm = this.norm(document);
    if (queryNorm === 0 || limit <= 0) return [];
    const scores = this.scores;
    const touched: number[] = [];
    const commonLimit = Math.max(COMMON_TERM_FLOOR, COMMON_TERM_SHARE * this.size);
    const common: { hash: number; queryWeight: number }[] = [];
    for (let i = 0; i < document.hashes.length; i += 1) {
      const hash = document.hashes[i] as number;
      const list = this.postings.get(hash);
      if (list === undefined) continue;
      const idf = this.rarity(hash);
      const queryWeight = termWeight(document.counts[i] as number) * idf * idf;
      if (list.length > commonLimit) {
        common.push({ hash, queryWeight });
        continue;
      }
      const { docs, weights, length } = list;
      for (let p = 0; p < length; p += 1) {
        const d = docs[p] as number;
        if (scores[d] === 0) touched.push(d);
        scores[d] = (scores[d] as number) + queryWeight * (weights[p] as number);
      }
    }
    const cosine = (d: number, dot: number) => {
      const norm = this.norms[d] as number;
      return norm === 0 ? 0 : Math.min(1, dot / (queryNorm * norm));
    };
    // Without common terms the scores are complete. With them, only the documents best on the
    // rarer terms are completed: a common term's weight is small beside a rare one's, and
    // completing every document found would cost a lookup per document and common term.
    const shortlist = new TopMatches(common.length === 0 ? limit : Math.max(limit, SHORTLIST));
    for (const d of touched) {
      shortlist.offer(d, cosine(d, scores[d] as number));
    }
    const best = common.length === 0 ? shortlist : new TopMatches(limit);
    if (common.length > 0) {
      for (const { ordinal: d } of shortlist.sorted()) {
        let dot = scores[d] as number;
        const candidate = this.documents[d]!;
        for (const { hash, queryWeight } of common) {
          const at = indexOf(candidate.hashes, hash);
          if (at !== -1) dot += queryWeight * termWeight(candidate.counts[at] as number);
        }
        best.offer(d, cosine(d, dot));
      }
    }
    for (const d of touched) scores[d] = 0;
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
