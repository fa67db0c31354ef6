/**
 * Words of a text, for any script. Space-separated languages give words (NFKC, lowercased);
 * Chinese, Japanese and Thai, written without spaces, give overlapping pairs of characters.
 * Punctuation, control characters and emoji separate words and are never part of one.
 */
import { eachAsciiWord } from '../ascii-words.js';

/** Shorter words ("a", "i", the parts of "2.53.7") say nothing of a problem. */
export const MIN_WORD_LENGTH = 2;

/** Words taken from one text at most: whatever follows is not read. */
export const MAX_WORDS_PER_TEXT = 2_000;

/** Runs of letters, marks and digits: everything else (spaces, punctuation, symbols, emoji, controls) splits. */
const WORD_RUN = /[\p{L}\p{M}\p{N}]+/gu;

/** Scripts written without spaces between words. */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

/**
 * Text of 7-bit characters only (most reports): NFKC leaves it as it is, and its letters, marks
 * and digits are a-z, A-Z and 0-9, none of an unspaced script.
 */
const SEVEN_BIT = /^[^\u0080-\uffff]*$/;

export function tokenize(text: string, maxWords = MAX_WORDS_PER_TEXT): string[] {
  const words: string[] = [];
  if (text === '') return words;
  // The same words as below, without a match object per word or a script test per run.
  if (SEVEN_BIT.test(text)) return sevenBitWords(text.toLowerCase(), words, maxWords);
  const normalised = text.normalize('NFKC').toLowerCase();
  for (const match of normalised.matchAll(WORD_RUN)) {
    const run = match[0];
    // Most runs are of one spaced script: one test of the whole run, not one per character.
    if (!UNSPACED.test(run)) {
      if (atLeastCharacters(run, MIN_WORD_LENGTH)) words.push(run);
    } else {
      runWords(run, words, maxWords);
    }
    if (words.length >= maxWords) {
      words.length = maxWords;
      return words;
    }
  }
  return words;
}

/** The runs of a-z and 0-9 of a lowercased 7-bit text, as tokenize takes them. */
function sevenBitWords(text: string, words: string[], maxWords: number): string[] {
  eachAsciiWord(text, MIN_WORD_LENGTH, Infinity, (start, end) => {
    words.push(text.slice(start, end));
    return words.length < maxWords;
  });
  return words;
}

/** A run may mix scripts ("iphone版"): each stretch of spaced or unspaced script is cut its own way. */
function runWords(run: string, words: string[], maxWords: number): void {
  let stretch: string[] = [];
  let unspaced = false;
  for (const char of run) {
    if (words.length >= maxWords) return;
    const isUnspaced = UNSPACED.test(char);
    if (stretch.length > 0 && isUnspaced !== unspaced) {
      stretchWords(stretch, unspaced, words);
      stretch = [];
    }
    unspaced = isUnspaced;
    stretch.push(char);
  }
  if (stretch.length > 0) stretchWords(stretch, unspaced, words);
}

function stretchWords(chars: string[], unspaced: boolean, words: string[]): void {
  if (!unspaced) {
    if (chars.length >= MIN_WORD_LENGTH) words.push(chars.join(''));
    return;
  }
  if (chars.length === 1) {
    words.push(chars[0] as string);
    return;
  }
  for (let i = 0; i + 1 < chars.length; i += 1) {
    words.push((chars[i] as string) + (chars[i + 1] as string));
  }
}

/** Whether `text` holds at least `count` characters (code points), without splitting it. */
function atLeastCharacters(text: string, count: number): boolean {
  // A character takes one or two UTF-16 units: past 2 × count units there are enough.
  if (text.length >= 2 * count) return true;
  let characters = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // The second unit of a pair (a low surrogate after a high one) is no new character.
    const low = unit >= 0xdc00 && unit <= 0xdfff;
    const afterHigh = i > 0 && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff;
    if (!(low && afterHigh)) characters += 1;
    if (characters >= count) return true;
  }
  return false;
}
