/**
 * A record's terms and how much each counts, weighted by field. Three kinds of term, one hash
 * space:
 * - a word cut to its first five characters: a language-neutral stand-in for stemming that joins
 *   "scroll", "scrolling" and "scrolled";
 * - a pair of consecutive words ("not loading" says more than "not" and "loading");
 * - the four-character pieces of longer words, at a small weight, so a misspelt word
 *   ("unautorized") still shares most of its pieces with the right one ("unauthorized").
 * A title states the problem in few words, so its terms count more than the description's.
 */
import { consideredText, type SimilarRecord } from './considered-text.js';
import { termHash } from './term-hash.js';
import { tokenize } from './tokenize.js';
import { urlWords } from './url-words.js';

export interface TermOptions {
  /** How much more a title's term counts than a description's. Default 2. */
  readonly titleWeight: number;
  /** How much a pair of consecutive words counts against a single one. Default 0.5 (0: no pairs). */
  readonly pairWeight: number;
  /** How much a piece of a word counts against the word. Default 0.25 (0: no pieces). */
  readonly pieceWeight: number;
  /** How much a URL path word counts. Default 2. */
  readonly urlWeight: number;
  /** Longest word prefix kept as a term. Default 4. */
  readonly prefixLength: number;
}

export const DEFAULT_TERM_OPTIONS: TermOptions = {
  titleWeight: 2,
  pairWeight: 0.5,
  pieceWeight: 0.25,
  urlWeight: 2,
  prefixLength: 4,
};

/** Characters in a piece of a word; only words longer than a piece are cut into pieces. */
export const PIECE_LENGTH = 4;

/** Characters of a word cut into pieces at most: a 500-letter "word" is no word. */
const MAX_PIECED_WORD_LENGTH = 32;

/** Marks a word's start and end in its pieces, and keeps pieces apart from words and pairs. */
const PIECE_EDGE = '\u0002';
const PAIR_SEPARATOR = ' ';

/** Term hash to its weighted count in the record. */
export type TermCounts = Map<number, number>;

export function documentTerms(
  record: SimilarRecord,
  options: TermOptions = DEFAULT_TERM_OPTIONS,
): TermCounts {
  const text = consideredText(record);
  const counts: TermCounts = new Map();
  addWords(counts, tokenize(text.title), options.titleWeight, options);
  addWords(counts, tokenize(text.description), 1, options);
  addWords(counts, urlWords(text.url), options.urlWeight, {
    ...options,
    pairWeight: 0,
    pieceWeight: 0,
  });
  return counts;
}

function addWords(counts: TermCounts, words: string[], weight: number, options: TermOptions): void {
  if (weight <= 0) return;
  let previous: string | undefined;
  for (const word of words) {
    const chars = [...word];
    const term =
      chars.length > options.prefixLength ? chars.slice(0, options.prefixLength).join('') : word;
    add(counts, termHash(term), weight);
    if (options.pairWeight > 0 && previous !== undefined) {
      add(counts, termHash(previous + PAIR_SEPARATOR + term), weight * options.pairWeight);
    }
    previous = term;
    if (options.pieceWeight > 0 && chars.length > PIECE_LENGTH) {
      const edged = [PIECE_EDGE, ...chars.slice(0, MAX_PIECED_WORD_LENGTH), PIECE_EDGE];
      for (let i = 0; i + PIECE_LENGTH <= edged.length; i += 1) {
        add(
          counts,
          termHash(PIECE_EDGE + edged.slice(i, i + PIECE_LENGTH).join('')),
          weight * options.pieceWeight,
        );
      }
    }
  }
}

function add(counts: TermCounts, hash: number, weight: number): void {
  counts.set(hash, (counts.get(hash) ?? 0) + weight);
}
