/**
 * Cutting untrusted text to a length in UTF-16 units, as the service keeps and shows it (a title
 * in the history, a reason, a message), without cutting a character in two: a cut through a
 * surrogate pair left its first half alone, which JSON carries as `\ud83d` and a page shows as �.
 */

/**
 * At most `units` UTF-16 units of `text`; one fewer when the last would be the first half of a
 * pair.
 *
 * @example cutText('ab😀', 3) // 'ab'
 */
export function cutText(text: string, units: number): string {
  if (text.length <= units) return text;
  const code = text.charCodeAt(units - 1);
  const splitsPair = code >= 0xd800 && code <= 0xdbff;
  return text.slice(0, splitsPair ? units - 1 : units);
}
