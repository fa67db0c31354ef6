/**
 * Terms of a text, for any script. Space-separated languages give words (NFKC, lowercased, cut to
 * a prefix of five characters: a language-neutral stand-in for stemming that joins "scroll",
 * "scrolling" and "scrolled"); Chinese, Japanese and Thai, written without spaces, give overlapping pairs of
 * characters. Punctuation, control characters and emoji separate terms and are never terms.
 */

/** Longest prefix of a word kept as its term. */
export const WORD_PREFIX_LENGTH = 5;

/** Shorter words ("a", "i", the parts of "2.53.7") say nothing of a problem. */
export const MIN_WORD_LENGTH = 2;

/** Terms taken from one text at most: whatever follows is not read. */
export const MAX_TERMS_PER_TEXT = 2_000;

/** Runs of letters, marks and digits: everything else (spaces, punctuation, symbols, emoji, controls) splits. */
const WORD_RUN = /[\p{L}\p{M}\p{N}]+/gu;

/** Scripts written without spaces between words. */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

export function tokenize(
  text: string,
  maxTerms = MAX_TERMS_PER_TEXT,
  prefixLength = WORD_PREFIX_LENGTH,
): string[] {
  const terms: string[] = [];
  if (text === '') return terms;
  const normalised = text.normalize('NFKC').toLowerCase();
  for (const match of normalised.matchAll(WORD_RUN)) {
    for (const term of runTerms(match[0], prefixLength)) {
      terms.push(term);
      if (terms.length >= maxTerms) return terms;
    }
  }
  return terms;
}

/** A run may mix scripts ("iphone版"): each stretch of spaced or unspaced script is cut its own way. */
function* runTerms(run: string, prefixLength: number): Generator<string> {
  let stretch: string[] = [];
  let unspaced = false;
  for (const char of run) {
    const isUnspaced = UNSPACED.test(char);
    if (stretch.length > 0 && isUnspaced !== unspaced) {
      yield* stretchTerms(stretch, unspaced, prefixLength);
      stretch = [];
    }
    unspaced = isUnspaced;
    stretch.push(char);
  }
  if (stretch.length > 0) yield* stretchTerms(stretch, unspaced, prefixLength);
}

function* stretchTerms(
  chars: string[],
  unspaced: boolean,
  prefixLength: number,
): Generator<string> {
  if (!unspaced) {
    if (chars.length < MIN_WORD_LENGTH) return;
    yield chars.slice(0, prefixLength).join('');
    return;
  }
  if (chars.length === 1) {
    yield chars[0] as string;
    return;
  }
  for (let i = 0; i + 1 < chars.length; i += 1)
    yield (chars[i] as string) + (chars[i + 1] as string);
}
