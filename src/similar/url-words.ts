/**
 * Words of a page URL: those of its path ("/checkout/payment" gives "checkout", "payment"), which
 * say which part of the product a report is about. The scheme, the query and the fragment say
 * little about the problem (and often carry session ids), so they are left out; so is the host,
 * which every report of a project shares.
 */
import { tokenize } from './tokenize.js';

/** Path words kept at most. */
export const MAX_URL_WORDS = 16;

export function urlWords(url: string): string[] {
  if (url === '') return [];
  // Digits-only segments are ids (orders, users): they would tie two reports of one page together
  // only when they are about the same object, which the description says better.
  return tokenize(decodeSafely(pathOf(url)), MAX_URL_WORDS * 4)
    .filter((word) => !/^\p{N}+$/u.test(word))
    .slice(0, MAX_URL_WORDS);
}

function pathOf(url: string): string {
  const withoutScheme = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  const end = withoutScheme.search(/[?#]/);
  return end === -1 ? withoutScheme : withoutScheme.slice(0, end);
}

function decodeSafely(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    // A malformed escape ("%E0%A4%A") is text like any other: its letters still make words.
    return path;
  }
}
