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
import { foldHash, hashOnward, TERM_HASH_START } from './term-hash.js';
import { TermTable } from './term-table.js';
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
  const table = recordTerms(record, options);
  const counts = table.counts();
  const terms: TermCounts = new Map();
  table.hashes().forEach((hash, i) => terms.set(hash, counts[i]!));
  return terms;
}

/**
 * documentTerms in a TermTable; with `fold`, each hash folded as a compact document keeps it
 * (foldHash: terms whose folded hashes meet count as one), as grouping reads them.
 */
export function recordTerms(
  record: SimilarRecord,
  options: TermOptions = DEFAULT_TERM_OPTIONS,
  fold = false,
): TermTable {
  const text = consideredText(record);
  const table = new TermTable();
  const sink = { table, fold };
  addWords(sink, tokenize(text.title), options.titleWeight, options);
  addWords(sink, tokenize(text.description), 1, options);
  addWords(sink, urlWords(text.url), options.urlWeight, {
    ...options,
    pairWeight: 0,
    pieceWeight: 0,
  });
  return table;
}

/** Where addWords counts terms, and whether it folds their hashes first. */
interface Sink {
  readonly table: TermTable;
  readonly fold: boolean;
}

function addWords(counts: Sink, words: string[], weight: number, options: TermOptions): void {
  if (weight <= 0) return;
  const pairWeight = weight * options.pairWeight;
  const pieceWeight = weight * options.pieceWeight;
  /** The previous word's term, as a hash not yet ended, with the separator after it. */
  let previousThenSeparator: number | undefined;
  for (const word of words) {
    // Most words are of single-unit characters: their terms are hashed straight from the word,
    // with no string or array made per term (tokenising is most of grouping's work).
    const units = hasSurrogates(word) ? undefined : word;
    const term = units === undefined ? [...word] : undefined;
    const characters = units?.length ?? term!.length;
    const prefixText = units ?? term!.slice(0, options.prefixLength).join('');
    const prefixUnits =
      units === undefined ? prefixText.length : Math.min(characters, options.prefixLength);
    const termState = hashOnward(TERM_HASH_START, prefixText, 0, prefixUnits);
    add(counts, termState >>> 0, weight);
    if (options.pairWeight > 0 && previousThenSeparator !== undefined) {
      add(counts, hashOnward(previousThenSeparator, prefixText, 0, prefixUnits) >>> 0, pairWeight);
    }
    previousThenSeparator = hashOnward(termState, PAIR_SEPARATOR, 0, PAIR_SEPARATOR.length);
    if (options.pieceWeight > 0 && characters > PIECE_LENGTH) {
      const piecedCharacters = Math.min(characters, MAX_PIECED_WORD_LENGTH);
      const edged =
        units === undefined
          ? [PIECE_EDGE, ...term!.slice(0, MAX_PIECED_WORD_LENGTH), PIECE_EDGE]
          : undefined;
      for (let i = 0; i + PIECE_LENGTH <= piecedCharacters + 2; i += 1) {
        let piece = hashOnward(TERM_HASH_START, PIECE_EDGE, 0, PIECE_EDGE.length);
        if (edged !== undefined) {
          const text = edged.slice(i, i + PIECE_LENGTH).join('');
          piece = hashOnward(piece, text, 0, text.length);
        } else {
          // The piece's units in the edged word: an edge, then the word's, then an edge.
          for (let at = i; at < i + PIECE_LENGTH; at += 1) {
            piece =
              at === 0 || at === piecedCharacters + 1
                ? hashOnward(piece, PIECE_EDGE, 0, PIECE_EDGE.length)
                : hashOnward(piece, units!, at - 1, at);
          }
        }
        add(counts, piece >>> 0, pieceWeight);
      }
    }
  }
}

/** Whether the text holds a character of two UTF-16 units (outside the Basic Multilingual Plane). */
function hasSurrogates(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdfff) return true;
  }
  return false;
}

function add(counts: Sink, hash: number, weight: number): void {
  counts.table.add(counts.fold ? foldHash(hash) : hash, weight);
}
