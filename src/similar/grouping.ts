/**
 * Which group a new document joins: its best match's group when the score reaches the threshold,
 * otherwise a group of its own. A missed merge is better than a wrong one (a wrong one hides a
 * second problem behind the first), so the default threshold is set for precision.
 */
import type { SimilarMatch } from './similarity-index.js';

/** The default SIMILAR_THRESHOLD. */
export const DEFAULT_SIMILAR_THRESHOLD = 0.35;

/** The group to join, or undefined for a new group. `groupOf` gives each earlier document's group. */
export function chooseGroup<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch) => G,
  threshold = DEFAULT_SIMILAR_THRESHOLD,
): G | undefined {
  const best = matches[0];
  return best !== undefined && best.score >= threshold ? groupOf(best) : undefined;
}
