/**
 * The words of lower-cased 7-bit text, read by character codes: the runs of a-z and 0-9, as a
 * split on `[^a-z0-9]+` gives them, without making the strings between them. Most feedback is
 * plain ASCII, which NFKC leaves as it is, so both the history's words (history/search-terms.ts)
 * and grouping's (similar/tokenize.ts) read it this way, each with its own rules for what a word
 * is and what to make of it.
 */

/**
 * Calls `take(start, end)` for each run of a-z and 0-9 in `text` of `shortest` to `longest` UTF-16
 * units, in order, until it returns false.
 */
export function eachAsciiWord(
  text: string,
  shortest: number,
  longest: number,
  take: (start: number, end: number) => boolean,
): void {
  let start = -1;
  for (let at = 0; at <= text.length; at += 1) {
    const code = at < text.length ? text.charCodeAt(at) : 0;
    if ((code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39)) {
      if (start < 0) start = at;
      continue;
    }
    if (start < 0) continue;
    const length = at - start;
    if (length >= shortest && length <= longest && !take(start, at)) return;
    start = -1;
  }
}
