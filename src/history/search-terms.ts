/**
 * The words a delivery is found by, and those a search asks for: the same rule for both. A word
 * is a run of letters and digits (any script), lower-cased, at least two long, and not one of a
 * few English words every text has; so a reporter email `ana@example.com` is found by
 * `ana@example.com`, by `ana` or by `example`.
 */
import { eachAsciiWord } from '../ascii-words.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';

/** Longer runs are ids or noise, not words anyone types. */
const LONGEST_WORD = 40;
/** A record's description can be long; its first words are what people search for. */
const MOST_WORDS = 300;

const NOT_A_WORD = /[^\p{L}\p{N}]+/u;
const NOT_PRINTABLE_ASCII = /[^\t\n\r -~]/;

/**
 * English words in nearly every description: a search for one would find everything, and their
 * lists would be most of the history's memory. Left out of records and searches alike.
 */
const STOP_WORDS = new Set(
  'an and are as at be but by for from had has have he her his if in is it its me my no not of on or our she so than that the their them then there they this to was we were what when which who will with you your'.split(
    ' ',
  ),
);

/** A description's first characters hold the words a search needs; the rest is not read. */
const LONGEST_TEXT = 20_000;

/** The words of `text`, each once, in the order they first come; at most `most` of them. */
export function wordsOf(text: string, most = Infinity): string[] {
  const words = new Set<string>();
  const head = text.slice(0, LONGEST_TEXT);
  // Most feedback is plain ASCII, which NFKC leaves as it is: read by character codes, faster.
  if (!NOT_PRINTABLE_ASCII.test(head)) {
    asciiWords(head.toLowerCase(), words, most);
    return [...words];
  }
  for (const word of head.normalize('NFKC').toLowerCase().split(NOT_A_WORD)) {
    if (word.length >= 2 && word.length <= LONGEST_WORD && !STOP_WORDS.has(word)) {
      words.add(word);
      if (words.size >= most) break;
    }
  }
  return [...words];
}

/** The words of lower-cased printable ASCII, as a split on `[^a-z0-9]+` would give them. */
function asciiWords(text: string, words: Set<string>, most: number): void {
  eachAsciiWord(text, 2, LONGEST_WORD, (start, end) => {
    const word = text.slice(start, end);
    if (STOP_WORDS.has(word)) return true;
    words.add(word);
    return words.size < most;
  });
}

/**
 * What a record is found by: the words of its title, reporter email and description. The email
 * comes before the description, whose words past the 300th different one are not kept.
 */
export function recordWords(record: FeedbackRecord): string[] {
  const text = [record.title, record.reporter?.email, record.description]
    .filter((part): part is string => typeof part === 'string')
    .join(' ');
  return wordsOf(text, MOST_WORDS);
}
