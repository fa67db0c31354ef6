/**
 * How well reports were grouped, against the true groups of a data file (its README says how to
 * score): Recall@k at the group level, over the reports whose true group has an earlier report,
 * and B-cubed precision and recall of the groups formed. Shared by the offline measure and the
 * bench through real processes, so both score alike.
 */

export interface ScoredReport {
  /** The report's true group. */
  readonly truth: string;
  /** The group it was put in. */
  readonly formed: string;
  /** The true groups of its best matches, best first (earlier reports only). */
  readonly matchTruths: readonly string[];
}

export interface GroupingScores {
  readonly recallAt: { readonly 1: number; readonly 5: number; readonly 10: number };
  /** Reports whose true group has an earlier report: what Recall@k is taken over. */
  readonly withEarlier: number;
  readonly bCubedPrecision: number;
  readonly bCubedRecall: number;
  readonly groupsFormed: number;
  readonly trueGroups: number;
}

/** Scores reports given in their arrival order. */
export function scoreGrouping(reports: readonly ScoredReport[]): GroupingScores {
  const seen = new Set<string>();
  const hits = { 1: 0, 5: 0, 10: 0 };
  let withEarlier = 0;
  for (const report of reports) {
    if (seen.has(report.truth)) {
      withEarlier += 1;
      const distinct = [...new Set(report.matchTruths)];
      for (const k of [1, 5, 10] as const) {
        if (distinct.slice(0, k).includes(report.truth)) hits[k] += 1;
      }
    }
    seen.add(report.truth);
  }
  const share = (n: number) => (withEarlier === 0 ? 1 : n / withEarlier);
  const { precision, recall } = bCubed(reports);
  return {
    recallAt: { 1: share(hits[1]), 5: share(hits[5]), 10: share(hits[10]) },
    withEarlier,
    bCubedPrecision: precision,
    bCubedRecall: recall,
    groupsFormed: new Set(reports.map((report) => report.formed)).size,
    trueGroups: seen.size,
  };
}

function bCubed(reports: readonly ScoredReport[]): { precision: number; recall: number } {
  const count = (key: (report: ScoredReport) => string) => {
    const counts = new Map<string, number>();
    for (const report of reports) counts.set(key(report), (counts.get(key(report)) ?? 0) + 1);
    return counts;
  };
  const formed = count((report) => report.formed);
  const truth = count((report) => report.truth);
  const both = count((report) => `${report.formed}\u0000${report.truth}`);
  let precision = 0;
  let recall = 0;
  for (const report of reports) {
    const shared = both.get(`${report.formed}\u0000${report.truth}`)!;
    precision += shared / formed.get(report.formed)!;
    recall += shared / truth.get(report.truth)!;
  }
  const n = Math.max(reports.length, 1);
  return { precision: precision / n, recall: recall / n };
}
