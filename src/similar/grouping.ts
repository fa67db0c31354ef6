/**
 * Which group a new document joins: the group with the strongest evidence among its matches, when
 * that evidence reaches the threshold, otherwise a group of its own. A missed merge is better than
 * a wrong one (a wrong one hides a second problem behind the first), so the default threshold is
 * set for precision.
 *
 * A group's evidence is its best member's score plus a share of its second best's. One match says
 * "these two reports share words"; a second member of the same group scoring too says the shared
 * words are the problem's, not one writer's. Paraphrases of one bug score low against any single
 * report (0.15 to 0.35, the range of unrelated reports written from one template), but a report
 * of a group already described several ways usually matches two of its members: on webapp-650 this
 * raised B-cubed recall from 0.59 to 0.71 at the same precision (bench/similar-what-we-tried.md).
 */
import type { SimilarMatch } from './similarity-index.js';

/** The default SIMILAR_THRESHOLD: the group evidence (0 to 1) from which a document joins. */
export const DEFAULT_SIMILAR_THRESHOLD = 0.425;

/** How much a group's second-best member adds to its best member's score. */
export const SECOND_MEMBER_WEIGHT = 0.5;

/**
 * The group to join, or undefined for a new group. `groupOf` gives each earlier document's group;
 * `matches` are best first. Ties go to the group whose best member comes first.
 */
export function chooseGroup<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch) => G,
  threshold = DEFAULT_SIMILAR_THRESHOLD,
  secondMemberWeight = SECOND_MEMBER_WEIGHT,
): G | undefined {
  let chosen: G | undefined;
  let chosenEvidence = -1;
  for (const [group, evidence] of groupEvidence(matches, groupOf, secondMemberWeight)) {
    if (evidence > chosenEvidence) {
      chosen = group;
      chosenEvidence = evidence;
    }
  }
  return chosenEvidence >= threshold ? chosen : undefined;
}

/**
 * Each group among the matches with its evidence, min(1, best + weight × second best), in the
 * order of each group's best member.
 */
export function groupEvidence<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch) => G,
  secondMemberWeight = SECOND_MEMBER_WEIGHT,
): Map<G, number> {
  const members = new Map<G, { best: number; second: number }>();
  for (const match of matches) {
    const group = groupOf(match);
    const seen = members.get(group);
    if (seen === undefined) members.set(group, { best: match.score, second: 0 });
    else if (match.score > seen.second) {
      // Matches come best first, but a caller's list may not: keep the two highest either way.
      if (match.score > seen.best) members.set(group, { best: match.score, second: seen.best });
      else seen.second = match.score;
    }
  }
  const evidence = new Map<G, number>();
  for (const [group, { best, second }] of members) {
    evidence.set(group, Math.min(1, best + secondMemberWeight * second));
  }
  return evidence;
}
