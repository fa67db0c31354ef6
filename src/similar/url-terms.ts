/**
 * Terms of a page URL: the words of its path ("/checkout/payment" gives "checko", "paymen"), which
 * say which part of the product a report is about. The scheme, the query and the fragment say
 * little about the problem (and often carry session ids), so they are left out; so is the host,
 * which every report of a project shares.
 */
import { tokenize, WORD_PREFIX_LENGTH } from './tokenize.js';

/** Path terms kept at most. */
export const MAX_URL_TERMS = 16;

export function urlTerms(url: string, prefixLength = WORD_PREFIX_LENGTH): string[] {
  if (url === '') return [];
  const path = pathOf(url);
  // Digits-only segments are ids (orders, users): they would tie two reports of one page together
  // only when they are about the same object, which the description says better.
  return tokenize(decodeSafely(path), MAX_URL_TERMS * 4, prefixLength)
    .filter((term) => !/^\p{N}+$/u.test(term))
    .slice(0, MAX_URL_TERMS);
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
    // A malformed escape ("%E0%A4%A") is text like any other: its letters still make terms.
    return path;
  }
}
