/**
 * Which group a new document joins: the group with the strongest evidence among its matches, when
 * the confidence in it reaches the threshold, otherwise a group of its own. A missed merge is
 * better than a wrong one (a wrong one hides a second problem behind the first), so the default
 * threshold is set for precision.
 *
 * Paraphrases of one bug score low against any single report (0.15 to 0.35, the range of unrelated
 * reports written from one template), so one score decides badly. Two things decide better:
 * - a group's evidence is its best member's score plus half its second best's: a second member
 *   scoring too says the shared words are the problem's, not one writer's;
 * - the confidence is that evidence less half the mean score of the other matches: a report that
 *   scores alike against everything (a template, generic words) has a high background, and a
 *   duplicate stands out from it.
 * On webapp-650 they raise B-cubed recall from 0.59 to 0.74 at precision 0.96, without moving
 * seamonkey-1076 (bench/similar-what-we-tried.md).
 */
import type { SimilarMatch } from './similarity-index.js';

/** The default SIMILAR_THRESHOLD: the confidence (0 to 1) from which a document joins a group. */
export const DEFAULT_SIMILAR_THRESHOLD = 0.33;

/** How much a group's second-best member adds to its best member's score. */
export const SECOND_MEMBER_WEIGHT = 0.5;

/** How much of the mean score of the matches outside the group is taken off its evidence. */
export const BACKGROUND_WEIGHT = 0.5;

/**
 * The group to join, or undefined for a new group. `groupOf` gives each earlier document's group;
 * `matches` are best first. The group with the most evidence is the candidate (ties to the group
 * whose best member comes first); it is joined when its confidence reaches the threshold.
 */
export function chooseGroup<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch) => G,
  threshold = DEFAULT_SIMILAR_THRESHOLD,
  secondMemberWeight = SECOND_MEMBER_WEIGHT,
  backgroundWeight = BACKGROUND_WEIGHT,
): G | undefined {
  const candidate = bestGroup(matches, groupOf, secondMemberWeight, backgroundWeight);
  return candidate !== undefined && candidate.confidence >= threshold ? candidate.group : undefined;
}

/**
 * The group with the most evidence among the matches, and the confidence that the document
 * belongs to it: the evidence less a share of the mean score of the matches outside the group,
 * from 0 to 1.
 */
export function bestGroup<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch) => G,
  secondMemberWeight = SECOND_MEMBER_WEIGHT,
  backgroundWeight = BACKGROUND_WEIGHT,
): { group: G; evidence: number; confidence: number } | undefined {
  const groups = matches.map((match) => groupOf(match));
  let chosen: { group: G; evidence: number } | undefined;
  const evidence = groupEvidence(matches, (_match, i) => groups[i]!, secondMemberWeight);
  for (const [group, value] of evidence) {
    if (chosen === undefined || value > chosen.evidence) chosen = { group, evidence: value };
  }
  if (chosen === undefined) return undefined;
  let outside = 0;
  let outsideCount = 0;
  matches.forEach((match, i) => {
    if (groups[i] !== chosen.group) {
      outside += match.score;
      outsideCount += 1;
    }
  });
  const background = outsideCount === 0 ? 0 : outside / outsideCount;
  return { ...chosen, confidence: Math.max(0, chosen.evidence - backgroundWeight * background) };
}

/**
 * Each group among the matches with its evidence, min(1, best + weight × second best), in the
 * order of each group's best member.
 */
export function groupEvidence<G>(
  matches: readonly SimilarMatch[],
  groupOf: (match: SimilarMatch, index: number) => G,
  secondMemberWeight = SECOND_MEMBER_WEIGHT,
): Map<G, number> {
  const members = new Map<G, { best: number; second: number }>();
  matches.forEach((match, i) => {
    const group = groupOf(match, i);
    const seen = members.get(group);
    if (seen === undefined) members.set(group, { best: match.score, second: 0 });
    else if (match.score > seen.second) {
      // Matches come best first, but a caller's list may not: keep the two highest either way.
      if (match.score > seen.best) members.set(group, { best: match.score, second: seen.best });
      else seen.second = match.score;
    }
  });
  const evidence = new Map<G, number>();
  for (const [group, { best, second }] of members) {
    evidence.set(group, Math.min(1, best + secondMemberWeight * second));
  }
  return evidence;
}
