/**
 * Research for issue 30 (third round): can groups found later to be one be merged, so that
 * webapp-650 reaches B-cubed recall 0.85 at precision 0.95 without hurting seamonkey-1076? Replays
 * each file once through the in-memory engine for its matches (the ranking does not depend on the
 * grouping), then replays join-and-merge rules over those matches with a union-find: a merged
 * group's id is its oldest member's, and B-cubed is scored on the final, merged groups.
 *
 *   npm run build && tsc -p bench && node dist-bench/bench/similar-merge.js [--data file]...
 *     [--rule <part of a rule's name>]...  each rule's sweep, B³ P / R (groups, merges/wrong merges)
 *     [--rule best]        per rule, the threshold where webapp's precision is >= 0.95 with the most recall
 *     [--rule ceiling]     what merging could reach: the engine's groups merged by the true groups
 *     [--rule fragments]   how the engine splits each of webapp's true groups at 0.325
 * Results and why: bench/similar-what-we-tried.md, "Third round".
 */
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { bestGroup, groupEvidence } from '../src/similar/grouping.js';
import { SimilarGrouper } from '../src/similar/similar-grouper.js';
import type { SimilarMatch } from '../src/similar/similarity-index.js';
import { readSimilarData, SIMILAR_DATA, type SimilarDataLine } from './similar-data.js';
import { scoreGrouping } from './similar-scores.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', multiple: true },
    rule: { type: 'string', multiple: true },
  },
});

type Row = SimilarDataLine;

/** Each record's 10 best earlier matches, in arrival order. */
function matchesOf(rows: Row[]): SimilarMatch[][] {
  const grouper = new SimilarGrouper();
  return rows.map(({ record }) => grouper.add(record.id, record).matches);
}

/** Groups as a union-find over arrival ordinals: a group is known by its oldest member. */
class Groups {
  private readonly parent: number[] = [];
  readonly members = new Map<number, number[]>();
  merges = 0;
  wrongMerges = 0;
  /** The true group of each ordinal, to count merges of two groups whose majorities differ. */
  truth: (ordinal: number) => string = () => '';

  majority(root: number): string {
    const counts = new Map<string, number>();
    for (const i of this.members.get(root)!)
      counts.set(this.truth(i), (counts.get(this.truth(i)) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
  }

  add(ordinal: number, group: number | undefined): void {
    const root = group === undefined ? ordinal : this.find(group);
    this.parent[ordinal] = root;
    const list = this.members.get(root) ?? [];
    list.push(ordinal);
    this.members.set(root, list);
  }

  find(ordinal: number): number {
    let root = ordinal;
    while (this.parent[root] !== root) root = this.parent[root]!;
    while (this.parent[ordinal] !== root) {
      const next = this.parent[ordinal]!;
      this.parent[ordinal] = root;
      ordinal = next;
    }
    return root;
  }

  /** The younger group becomes an alias of the older. */
  union(a: number, b: number): number {
    const [older, younger] = [this.find(a), this.find(b)].sort((x, y) => x - y) as [number, number];
    if (older === younger) return older;
    if (this.majority(older) !== this.majority(younger)) this.wrongMerges += 1;
    this.parent[younger] = older;
    this.members.set(older, [...this.members.get(older)!, ...this.members.get(younger)!]);
    this.members.delete(younger);
    this.merges += 1;
    return older;
  }
}

interface Rule {
  readonly name: string;
  /** Decides the new record's group and which groups merge, given its matches and the groups. */
  decide(ordinal: number, matches: SimilarMatch[], groups: Groups, threshold: number): void;
}

const SECOND = 0.5;
const BACKGROUND = 0.5;

/** The engine's rule: join the group with the most evidence when its confidence reaches the threshold. */
function join(matches: SimilarMatch[], groups: Groups, threshold: number): number | undefined {
  const best = bestGroup(matches, (m) => groups.find(m.ordinal), SECOND, BACKGROUND);
  return best !== undefined && best.confidence >= threshold ? best.group : undefined;
}

/** The confidence of each group among the matches, as bestGroup computes it for the best one. */
function confidences(matches: SimilarMatch[], groups: Groups): Map<number, number> {
  const of = matches.map((m) => groups.find(m.ordinal));
  const evidence = groupEvidence(matches, (_m, i) => of[i]!, SECOND);
  const result = new Map<number, number>();
  for (const [group, value] of evidence) {
    let outside = 0;
    let count = 0;
    matches.forEach((m, i) => {
      if (of[i] !== group) {
        outside += m.score;
        count += 1;
      }
    });
    result.set(group, Math.max(0, value - BACKGROUND * (count === 0 ? 0 : outside / count)));
  }
  return result;
}

const baseline: Rule = {
  name: 'join only (the engine now)',
  decide(ordinal, matches, groups, threshold) {
    groups.add(ordinal, join(matches, groups, threshold));
  },
};

/**
 * Join as now; then every other group whose own confidence (as if it were the candidate) reaches
 * threshold + margin merges into the joined one.
 */
function mergeSecondGroup(margin: number): Rule {
  return {
    name: `join, and merge a second group whose confidence reaches threshold + ${margin}`,
    decide(ordinal, matches, groups, threshold) {
      const joined = join(matches, groups, threshold);
      groups.add(ordinal, joined);
      if (joined === undefined) return;
      for (const [group, confidence] of confidences(matches, groups)) {
        if (group !== groups.find(ordinal) && confidence >= threshold + margin) {
          groups.union(group, ordinal);
        }
      }
    },
  };
}

/**
 * Join as now; merge two groups when `members` distinct members of each have a match (score at
 * least `score`) in the other: the links are the matches each delivery kept of earlier ones.
 */
function mergeByLinks(members: number, score: number): Rule {
  const links: { from: number; to: number; score: number }[] = [];
  return {
    name: `join, and merge groups linked by >= ${members} members each side (matches >= ${score})`,
    decide(ordinal, matches, groups, threshold) {
      if (ordinal === 0) links.length = 0;
      groups.add(ordinal, join(matches, groups, threshold));
      for (const m of matches)
        if (m.score >= score) links.push({ from: ordinal, to: m.ordinal, score: m.score });
      const mine = groups.find(ordinal);
      const others = new Set(matches.map((m) => groups.find(m.ordinal)).filter((g) => g !== mine));
      for (const other of others) {
        const a = new Set<number>();
        const b = new Set<number>();
        for (const link of links) {
          const from = groups.find(link.from);
          const to = groups.find(link.to);
          if (from === mine && to === other) {
            a.add(link.from);
            b.add(link.to);
          } else if (from === other && to === mine) {
            a.add(link.to);
            b.add(link.from);
          }
        }
        if (a.size >= members && b.size >= members) groups.union(mine, other);
      }
    },
  };
}

type PairFeature = (link: { sum: number; count: number }, sizeA: number, sizeB: number) => number;

const FEATURES: Record<string, PairFeature> = {
  'sum of link scores': (l) => l.sum,
  'sum / sqrt(|A| |B|)': (l, a, b) => l.sum / Math.sqrt(a * b),
  'sum / (|A| |B|) (average link)': (l, a, b) => l.sum / (a * b),
  'sum / min(|A|, |B|)': (l, a, b) => l.sum / Math.min(a, b),
};

/**
 * Join as now; keep, for each two groups, the sum and count of the kept matches between their
 * members (each delivery's 10 matches of earlier ones, scores of at least `floor`); two groups
 * merge when `feature` of their links reaches `level`, both having at least `minSize` members.
 */
function mergeByGroupLinks(
  featureName: string,
  level: number,
  floor: number,
  minSize: number,
): Rule {
  const feature = FEATURES[featureName]!;
  let adjacency = new Map<number, Map<number, { sum: number; count: number }>>();
  const linksOf = (root: number) => {
    let map = adjacency.get(root);
    if (map === undefined) adjacency.set(root, (map = new Map()));
    return map;
  };
  const addLink = (a: number, b: number, score: number, count: number) => {
    if (a === b) return;
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      const entry = linksOf(x).get(y) ?? { sum: 0, count: 0 };
      entry.sum += score;
      entry.count += count;
      linksOf(x).set(y, entry);
    }
  };
  const unite = (groups: Groups, a: number, b: number): number => {
    const root = groups.union(a, b);
    const gone = root === a ? b : a;
    const moved = adjacency.get(gone) ?? new Map();
    adjacency.delete(gone);
    for (const [other, { sum, count }] of moved) {
      adjacency.get(other)?.delete(gone);
      if (other !== root) addLink(root, other, sum, count);
    }
    linksOf(root).delete(gone);
    return root;
  };
  return {
    name: `join, and merge groups whose links' ${featureName} reaches ${level} (matches >= ${floor}, both of >= ${minSize})`,
    decide(ordinal, matches, groups, threshold) {
      if (ordinal === 0) adjacency = new Map();
      const joined = join(matches, groups, threshold);
      groups.add(ordinal, joined);
      let mine = groups.find(ordinal);
      if (joined === undefined) linksOf(mine);
      for (const m of matches)
        if (m.score >= floor) addLink(mine, groups.find(m.ordinal), m.score, 1);
      // A merge can make the merged group pass with another: check again until none passes.
      for (let merged = true; merged;) {
        merged = false;
        const sizeMine = groups.members.get(mine)!.length;
        if (sizeMine < minSize) break;
        const candidates = [...linksOf(mine)].sort((x, y) => y[1].sum - x[1].sum || x[0] - y[0]);
        for (const [other, link] of candidates) {
          const sizeOther = groups.members.get(other)!.length;
          if (sizeOther >= minSize && feature(link, sizeMine, sizeOther) >= level) {
            mine = unite(groups, mine, other);
            merged = true;
            break;
          }
        }
      }
    },
  };
}

/**
 * Join with triangles: two of the new delivery's matches that are in different groups but matched
 * each other (one's kept matches hold the other, at a score of at least `link`) count as one
 * group for the evidence (best member + half the second best, less the background). When that
 * group is joined, the groups it was made of merge. A delivery of a problem whose earlier reports
 * each stayed alone (none had a second member to lift it) can gather them, if they agree.
 * `oneLarge`: two groups of several never merge; `rank`: the link among the earlier report's first
 * `rank` kept matches; `allEdges`: the new delivery matched both at `link` too (a whole triangle).
 */
function joinWithTriangles(
  link: number,
  allMatches: () => SimilarMatch[][],
  oneLarge = false,
  rank = 10,
  allEdges = false,
): Rule {
  return {
    name: `join with triangles: matches that matched each other at >= ${link} count as one group, merged on joining${oneLarge ? '; at most one group of more than one in it' : ''}${rank < 10 ? `; the link among the first ${rank} kept matches` : ''}${allEdges ? '; both matched at that level too' : ''}`,
    decide(ordinal, matches, groups, threshold) {
      const kept = allMatches();
      const local = new Map<number, number>();
      const localFind = (g: number): number => {
        while (local.has(g) && local.get(g) !== g) g = local.get(g)!;
        return g;
      };
      for (const a of matches) {
        if (a.score < link) continue;
        for (const b of kept[a.ordinal]!.slice(0, rank)) {
          // With allEdges, the new delivery matched both ends at the level too: a whole triangle.
          const floor = allEdges ? link : 0;
          if (b.score < link || !matches.some((m) => m.ordinal === b.ordinal && m.score >= floor)) {
            continue;
          }
          const [ga, gb] = [localFind(groups.find(a.ordinal)), localFind(groups.find(b.ordinal))];
          if (ga === gb) continue;
          // Two groups of several never merge: only groups of one are gathered (to one another or to one larger group).
          const large = (root: number) =>
            [...groups.members.keys()].some(
              (g) => localFind(g) === root && groups.members.get(g)!.length > 1,
            );
          if (oneLarge && large(ga) && large(gb)) continue;
          local.set(Math.max(ga, gb), Math.min(ga, gb));
        }
      }
      const best = bestGroup(matches, (m) => localFind(groups.find(m.ordinal)), SECOND, BACKGROUND);
      if (best === undefined || best.confidence < threshold) {
        groups.add(ordinal, undefined);
        return;
      }
      groups.add(ordinal, best.group);
      for (const m of matches) {
        if (localFind(groups.find(m.ordinal)) === best.group) groups.union(m.ordinal, ordinal);
      }
    },
  };
}

function run(rows: Row[], matches: SimilarMatch[][], rule: Rule, threshold: number) {
  const groups = new Groups();
  groups.truth = (i) => rows[i]!.group;
  currentMatches = matches;
  matches.forEach((m, ordinal) => rule.decide(ordinal, m, groups, threshold));
  const scores = scoreGrouping(
    rows.map((row, i) => ({
      truth: row.group,
      formed: String(groups.find(i)),
      matchTruths: matches[i]!.map((m) => rows[m.ordinal]!.group),
    })),
  );
  return { ...scores, merges: groups.merges, wrongMerges: groups.wrongMerges };
}

const rules: Rule[] = [baseline];
let currentMatches: SimilarMatch[][] = [];
for (const link of [0.15, 0.2, 0.25, 0.3, 0.35, 0.4])
  rules.push(joinWithTriangles(link, () => currentMatches));
for (const link of [0.2, 0.25, 0.3, 0.35, 0.4])
  rules.push(joinWithTriangles(link, () => currentMatches, true));
for (const rank of [1, 2, 3])
  for (const link of [0.2, 0.25, 0.3, 0.35])
    rules.push(joinWithTriangles(link, () => currentMatches, true, rank));
for (const link of [0.25, 0.275, 0.3, 0.325, 0.35, 0.375, 0.4]) {
  rules.push(joinWithTriangles(link, () => currentMatches, true, 10, true));
  rules.push(joinWithTriangles(link, () => currentMatches, false, 10, true));
}
const levels: Record<string, number[]> = {
  'sum of link scores': [0.8, 1, 1.2, 1.5, 2, 2.5, 3, 4],
  'sum / sqrt(|A| |B|)': [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1],
  'sum / (|A| |B|) (average link)': [0.1, 0.15, 0.2, 0.25, 0.3],
  'sum / min(|A|, |B|)': [0.4, 0.5, 0.6, 0.8, 1, 1.2],
};
for (const [featureName, list] of Object.entries(levels)) {
  for (const level of list)
    for (const floor of [0, 0.2])
      for (const minSize of [1, 2]) {
        rules.push(mergeByGroupLinks(featureName, level, floor, minSize));
      }
}
for (const margin of [0, 0.05, 0.1, 0.15, 0.2, 0.3]) rules.push(mergeSecondGroup(margin));
for (const members of [1, 2, 3])
  for (const score of [0.2, 0.25, 0.3, 0.35, 0.4]) rules.push(mergeByLinks(members, score));

const fixed = (v: number) => v.toFixed(3);

const files = (values.data ?? SIMILAR_DATA).map((file) => {
  const rows = readSimilarData(file);
  return { file, rows, matches: matchesOf(rows) };
});
for (const rule of rules) {
  if (values.rule !== undefined && !values.rule.some((r) => rule.name.includes(r))) continue;
  console.log(`\n## ${rule.name}`);
  console.log(
    'threshold | ' + files.map((f) => `${basename(f.file)} B³ P / R (groups, merges)`).join(' | '),
  );
  for (let step = 0; step <= 24; step += 1) {
    const t = 0.2 + 0.0125 * step;
    const cells = files.map(({ rows, matches }) => {
      const s = run(rows, matches, rule, t);
      return `${fixed(s.bCubedPrecision)} / ${fixed(s.bCubedRecall)} (${s.groupsFormed}, ${s.merges}/${s.wrongMerges})`;
    });
    console.log(`${t.toFixed(4)} | ${cells.join(' | ')}`);
  }
}

/**
 * Ceilings at one threshold: the engine's groups, then (a) merged by an oracle that unites the
 * fragments of one true group (by each fragment's majority), and (b) the same oracle allowed only
 * between fragments linked by a kept match (what a merge rule could ever see).
 */
function ceilings(rows: Row[], matches: SimilarMatch[][], threshold: number): string {
  const groups = new Groups();
  matches.forEach((m, ordinal) => baseline.decide(ordinal, m, groups, threshold));
  const majority = new Map<number, string>();
  for (const [root, members] of groups.members) {
    const counts = new Map<string, number>();
    for (const i of members) counts.set(rows[i]!.group, (counts.get(rows[i]!.group) ?? 0) + 1);
    majority.set(root, [...counts].sort((a, b) => b[1] - a[1])[0]![0]);
  }
  const score = (formed: (i: number) => string) =>
    scoreGrouping(rows.map((row, i) => ({ truth: row.group, formed: formed(i), matchTruths: [] })));
  const oracle = score((i) => majority.get(groups.find(i))!);
  const linked = new Groups();
  rows.forEach((_row, i) => linked.add(i, undefined));
  rows.forEach((_row, i) => {
    const gi = groups.find(i);
    linked.union(i, gi);
    for (const m of matches[i]!) {
      const gm = groups.find(m.ordinal);
      if (majority.get(gi) === majority.get(gm)) linked.union(gi, gm);
    }
  });
  const linkedScore = score((i) => String(linked.find(i)));
  const singles = [...groups.members.values()].filter((m) => m.length === 1).length;
  return (
    `at ${threshold}: oracle merge of fragments ${fixed(oracle.bCubedPrecision)} / ${fixed(oracle.bCubedRecall)}; ` +
    `only along kept matches ${fixed(linkedScore.bCubedPrecision)} / ${fixed(linkedScore.bCubedRecall)}; groups of one ${singles}`
  );
}
for (const { file, rows, matches } of files) {
  if (values.rule !== undefined && !values.rule.includes('ceiling')) continue;
  for (const t of [0.3, 0.325, 0.35, 0.4])
    console.log(`${basename(file)} ${ceilings(rows, matches, t)}`);
}

/** For each rule, the threshold where webapp's B³ precision is >= 0.95 with the most recall. */
if (values.rule?.includes('best')) {
  const named = values.rule.filter((r) => !['best', 'ceiling', 'fragments'].includes(r));
  for (const rule of rules) {
    if (named.length > 0 && !named.some((r) => rule.name.includes(r))) continue;
    let best: { t: number; cells: string[]; recall: number } | undefined;
    for (let step = 0; step <= 24; step += 1) {
      const t = 0.2 + 0.0125 * step;
      const results = files.map(({ rows, matches }) => run(rows, matches, rule, t));
      const web = results[0]!;
      if (web.bCubedPrecision >= 0.95 && (best === undefined || web.bCubedRecall > best.recall)) {
        best = {
          t,
          recall: web.bCubedRecall,
          cells: results.map(
            (r) =>
              `${fixed(r.bCubedPrecision)} / ${fixed(r.bCubedRecall)} (${r.merges} merges, ${r.wrongMerges} wrong)`,
          ),
        };
      }
    }
    if (best !== undefined)
      console.log(
        `${fixed(best.recall)} | ${rule.name} | ${best.t.toFixed(4)} | ${best.cells.join(' | ')}`,
      );
  }
}

/** How the engine's groups split each true group at one threshold: fragment sizes, largest first. */
if (values.rule?.includes('fragments')) {
  const { rows, matches } = files[0]!;
  const groups = new Groups();
  groups.truth = (i) => rows[i]!.group;
  matches.forEach((m, ordinal) => baseline.decide(ordinal, m, groups, 0.325));
  const split = new Map<string, Map<number, number>>();
  rows.forEach((row, i) => {
    const parts = split.get(row.group) ?? new Map<number, number>();
    parts.set(groups.find(i), (parts.get(groups.find(i)) ?? 0) + 1);
    split.set(row.group, parts);
  });
  const impure = new Map<number, Set<string>>();
  rows.forEach((row, i) =>
    impure.set(groups.find(i), (impure.get(groups.find(i)) ?? new Set()).add(row.group)),
  );
  for (const [truth, parts] of split) {
    if ([...parts.values()].reduce((a, b) => a + b) < 2) continue;
    const sizes = [...parts].map(([root, n]) => `${n}${impure.get(root)!.size > 1 ? '*' : ''}`);
    console.log(`${truth}: ${sizes.join(' ')}`);
  }
}
