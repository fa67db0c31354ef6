/**
 * A record's terms and how often each occurs, weighted by field: a title states the problem in
 * few words, so its terms count more than the description's. Consecutive word pairs are terms
 * too ("not loading" is more than "not" and "loading").
 */
import { consideredText, type SimilarRecord } from './considered-text.js';
import { termHash } from './term-hash.js';
import { MAX_TERMS_PER_TEXT, tokenize, WORD_PREFIX_LENGTH } from './tokenize.js';
import { urlTerms } from './url-terms.js';

export interface TermOptions {
  /** How much more a title's term counts than a description's. Default 2. */
  readonly titleWeight: number;
  /** How much a pair of consecutive terms counts against a single one. Default 0.5 (0: no pairs). */
  readonly pairWeight: number;
  /** How much a URL path term counts. Default 1. */
  readonly urlWeight: number;
  /** Longest word prefix kept as a term. Default WORD_PREFIX_LENGTH. */
  readonly prefixLength: number;
}

export const DEFAULT_TERM_OPTIONS: TermOptions = {
  titleWeight: 2,
  pairWeight: 0.5,
  urlWeight: 1,
  prefixLength: WORD_PREFIX_LENGTH,
};

/** Term hash to its weighted count in the record. */
export type TermCounts = Map<number, number>;

export function documentTerms(
  record: SimilarRecord,
  options: TermOptions = DEFAULT_TERM_OPTIONS,
): TermCounts {
  const text = consideredText(record);
  const counts: TermCounts = new Map();
  addText(
    counts,
    tokenize(text.title, MAX_TERMS_PER_TEXT, options.prefixLength),
    options.titleWeight,
    options.pairWeight,
  );
  addText(
    counts,
    tokenize(text.description, MAX_TERMS_PER_TEXT, options.prefixLength),
    1,
    options.pairWeight,
  );
  addText(counts, urlTerms(text.url, options.prefixLength), options.urlWeight, 0);
  return counts;
}

function addText(counts: TermCounts, terms: string[], weight: number, pairWeight: number): void {
  if (weight <= 0) return;
  for (let i = 0; i < terms.length; i += 1) {
    const term = terms[i] as string;
    add(counts, termHash(term), weight);
    if (pairWeight > 0 && i > 0)
      add(counts, termHash(`${terms[i - 1] as string} ${term}`), weight * pairWeight);
  }
}

function add(counts: TermCounts, hash: number, weight: number): void {
  counts.set(hash, (counts.get(hash) ?? 0) + weight);
}
