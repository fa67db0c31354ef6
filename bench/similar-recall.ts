/**
 * Research for issue 30 (fourth round): can group-level evidence, query expansion or the matched
 * reports' own background lift webapp-650's B-cubed recall to 0.85 at precision 0.95, without
 * hurting seamonkey-1076? Each file is replayed through the in-memory engine's terms and index
 * (the ranking, so Recall@k, does not depend on the grouping), and each rule decides the groups
 * online, from what is stored per delivery (its terms, its kept matches and their scores) or per
 * group (a bounded profile of its members' terms).
 *
 *   npm run build && tsc -p bench && node dist-bench/bench/similar-recall.js [--data file]...
 *     [--rule <part of a rule's name>]...  each rule: the threshold (steps of 0.0125 from 0.2)
 *                                          where webapp's B³ precision is >= 0.95 with the most
 *                                          recall, one step either side, and seamonkey there
 *     [--sweep]                            every threshold of the named rules
 *     [--auc]                              how well each signal tells a true best group from a false one
 *     [--misses]                           at 0.325, the reports the engine leaves alone, by what of
 *                                          their true group is among their matches
 * Results and why: bench/similar-what-we-tried.md, "Fourth round".
 */
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import {
  compactDocument,
  COUNT_STEP,
  type CompactDocument,
} from '../src/similar/compact-document.js';
import { documentTerms } from '../src/similar/document-terms.js';
import { bestGroup, groupEvidence } from '../src/similar/grouping.js';
import { rarityOf, type SimilarMatch, SimilarityIndex } from '../src/similar/similarity-index.js';
import { readSimilarData, SIMILAR_DATA, type SimilarDataLine } from './similar-data.js';
import { scoreGrouping } from './similar-scores.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', multiple: true },
    rule: { type: 'string', multiple: true },
    sweep: { type: 'boolean', default: false },
    auc: { type: 'boolean', default: false },
    misses: { type: 'boolean', default: false },
  },
});

const SECOND = 0.5;
const BACKGROUND = 0.5;

type Vector = Map<number, number>;

/** As the index weighs a term: sublinear count times rarity (now). */
function vectorOf(document: CompactDocument, rarity: (hash: number) => number): Vector {
  const vector: Vector = new Map();
  document.hashes.forEach((hash, i) => {
    const count = (document.counts[i] as number) * COUNT_STEP;
    const tf = count >= 1 ? 1 + Math.log(count) : count;
    vector.set(hash, tf * rarity(hash));
  });
  return vector;
}

function cosine(a: Vector, b: Vector): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [hash, w] of a) {
    na += w * w;
    const other = b.get(hash);
    if (other !== undefined) dot += w * other;
  }
  for (const w of b.values()) nb += w * w;
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

function unit(v: Vector): Vector {
  let n = 0;
  for (const w of v.values()) n += w * w;
  const norm = Math.sqrt(n) || 1;
  return new Map([...v].map(([h, w]) => [h, w / norm]));
}

/** Keeps the `size` heaviest terms. */
function bounded(v: Vector, size: number): Vector {
  if (v.size <= size) return v;
  return new Map([...v].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, size));
}

/** What a rule sees of the replay so far. */
interface State {
  readonly ordinal: number;
  readonly query: CompactDocument;
  readonly matches: SimilarMatch[];
  /** Each earlier delivery's group (its first delivery's ordinal). */
  readonly groupOf: number[];
  readonly members: Map<number, number[]>;
  readonly documents: CompactDocument[];
  /** Each earlier delivery's kept matches, as stored. */
  readonly kept: SimilarMatch[][];
  /** Each earlier delivery's later deliveries that kept it as a match, with their scores. */
  readonly keptBy: SimilarMatch[][];
  /** A term's rarity among the earlier deliveries, as the index weighs it. */
  readonly rarity: (hash: number) => number;
  /** The threshold of this replay, and the true group of each report: for the ceilings only. */
  readonly threshold: number;
  readonly truth: (ordinal: number) => string;
  /** A per-replay cache a rule may use (cleared per replay). */
  readonly cache: Map<string, unknown>;
}

interface Rule {
  readonly name: string;
  /** The group to join and the confidence in it, or undefined. */
  candidate(state: State): { group: number; confidence: number } | undefined;
}

const baseline: Rule = {
  name: 'the engine now (evidence and background)',
  candidate: (s) => bestGroup(s.matches, (m) => s.groupOf[m.ordinal]!, SECOND, BACKGROUND),
};

/**
 * Hubness (CSLS, Lample et al. 2018): a report that scores high against everything is a hub, and
 * a match with it means less. The query's own hubness is the background already; this takes off
 * γ × the best member's: the mean score of the matches it kept (of earlier deliveries), outside
 * its group when `outside`.
 */
function memberHubness(gamma: number, outside: boolean): Rule {
  return {
    name: `member hubness: − ${gamma} × the best member's mean kept score${outside ? ' outside its group' : ''}`,
    candidate(s) {
      const best = bestGroup(s.matches, (m) => s.groupOf[m.ordinal]!, SECOND, BACKGROUND);
      if (best === undefined) return undefined;
      const member = s.matches.find((m) => s.groupOf[m.ordinal] === best.group)!;
      const kept = s.kept[member.ordinal]!.filter(
        (k) => !outside || s.groupOf[k.ordinal] !== best.group,
      );
      const hub = kept.length === 0 ? 0 : kept.reduce((a, k) => a + k.score, 0) / kept.length;
      return { group: best.group, confidence: Math.max(0, best.confidence - gamma * hub) };
    },
  };
}

/**
 * A bounded group profile: each term of the group's members at its highest weight among them
 * (`combine` "max"), or their mean ("centroid", as round one), the `size` heaviest kept. The
 * query is scored against each candidate group's profile; `mode` says how that enters:
 * "max": the group's evidence is the larger of its evidence and the profile score;
 * "add": λ × how far the profile score passes the best member's is added.
 */
function groupProfile(
  size: number,
  combine: 'max' | 'centroid',
  mode: 'max' | 'add',
  lambda = 1,
  minMembers = 2,
): Rule {
  return {
    name: `group profile (${combine} of members' terms, ${size} terms), ${mode === 'max' ? 'evidence = max(evidence, profile score)' : `evidence + ${lambda} × (profile − best member)+`}, groups of ≥ ${minMembers}`,
    candidate(s) {
      const groups = s.matches.map((m) => s.groupOf[m.ordinal]!);
      const evidence = groupEvidence(s.matches, (_m, i) => groups[i]!, SECOND);
      const rarity = s.rarity;
      const query = vectorOf(s.query, rarity);
      const bestScore = new Map<number, number>();
      s.matches.forEach((m, i) => {
        if (!bestScore.has(groups[i]!)) bestScore.set(groups[i]!, m.score);
      });
      for (const [group, value] of evidence) {
        const members = s.members.get(group)!;
        if (members.length < minMembers) continue;
        const profile = profileOf(s, group, members, size, combine);
        const score = cosine(query, profile);
        const next =
          mode === 'max'
            ? Math.max(value, score)
            : value + lambda * Math.max(0, score - bestScore.get(group)!);
        evidence.set(group, Math.min(1, next));
      }
      return withBackground(s.matches, groups, evidence);
    },
  };
}

/** The group's profile, computed when its membership last changed (with the rarity then). */
function profileOf(
  s: State,
  group: number,
  members: number[],
  size: number,
  combine: 'max' | 'centroid',
): Vector {
  const key = `profile ${combine} ${size} ${group} ${members.length}`;
  const cached = s.cache.get(key) as Vector | undefined;
  if (cached !== undefined) return cached;
  const rarity = s.rarity;
  const profile: Vector = new Map();
  for (const ordinal of members) {
    const v =
      combine === 'max'
        ? vectorOf(s.documents[ordinal]!, rarity)
        : unit(vectorOf(s.documents[ordinal]!, rarity));
    for (const [h, w] of v) {
      profile.set(
        h,
        combine === 'max'
          ? Math.max(profile.get(h) ?? 0, w)
          : (profile.get(h) ?? 0) + w / members.length,
      );
    }
  }
  const result = bounded(profile, size);
  s.cache.set(key, result);
  return result;
}

/** The engine's choice over given evidence: the group with the most, less the background. */
function withBackground(
  matches: SimilarMatch[],
  groups: number[],
  evidence: Map<number, number>,
): { group: number; confidence: number } | undefined {
  let chosen: { group: number; evidence: number } | undefined;
  for (const [group, value] of evidence) {
    if (chosen === undefined || value > chosen.evidence) chosen = { group, evidence: value };
  }
  if (chosen === undefined) return undefined;
  let outside = 0;
  let count = 0;
  matches.forEach((m, i) => {
    if (groups[i] !== chosen.group) {
      outside += m.score;
      count += 1;
    }
  });
  const background = count === 0 ? 0 : outside / count;
  return {
    group: chosen.group,
    confidence: Math.max(0, chosen.evidence - BACKGROUND * background),
  };
}

/**
 * Pseudo-relevance feedback, leaving out what was fed back: the query is expanded with the best
 * match's terms (q + β × best, both unit vectors) and the expanded query scores the other
 * matches; a group's second member is taken from those scores. The best match itself is scored
 * with the plain query, so the expansion cannot vouch for the report it came from (round two's
 * expansion did, and lifted every best match alike). With `source` "group", the expansion is the
 * best group's profile (max of members' terms, 80) and the best member is left out of it.
 */
function feedback(beta: number, source: 'match' | 'group'): Rule {
  return {
    name: `feedback from the best ${source === 'match' ? 'match' : "group's other members"} at β ${beta}, second member scored by the expanded query`,
    candidate(s) {
      if (s.matches.length === 0) return undefined;
      const rarity = s.rarity;
      const groups = s.matches.map((m) => s.groupOf[m.ordinal]!);
      const first = s.matches[0]!;
      let expansionFrom: number[] = [first.ordinal];
      if (source === 'group') {
        expansionFrom = (s.members.get(groups[0]!) ?? []).filter((o) => o !== first.ordinal);
        if (expansionFrom.length === 0) expansionFrom = [first.ordinal];
      }
      const expansion: Vector = new Map();
      for (const o of expansionFrom) {
        for (const [h, w] of unit(vectorOf(s.documents[o]!, rarity)))
          expansion.set(h, Math.max(expansion.get(h) ?? 0, w));
      }
      const expanded = unit(vectorOf(s.query, rarity));
      for (const [h, w] of unit(bounded(expansion, 80)))
        expanded.set(h, (expanded.get(h) ?? 0) + beta * w);
      const rescored = s.matches.map((m) =>
        expansionFrom.includes(m.ordinal)
          ? m.score
          : cosine(expanded, vectorOf(s.documents[m.ordinal]!, rarity)),
      );
      const best = new Map<number, number>();
      const second = new Map<number, number>();
      s.matches.forEach((m, i) => {
        const g = groups[i]!;
        if (!best.has(g)) best.set(g, m.score);
        else second.set(g, Math.max(second.get(g) ?? 0, rescored[i]!));
      });
      const evidence = new Map<number, number>();
      for (const [g, b] of best) evidence.set(g, Math.min(1, b + SECOND * (second.get(g) ?? 0)));
      return withBackground(s.matches, groups, evidence);
    },
  };
}

/**
 * Document expansion by neighbours (Tao et al., 2006: a document is smoothed with its nearest
 * neighbours): each candidate group's best member is scored as itself plus α × its neighbours
 * (the matches it kept, and with `reverse` the later deliveries that kept it, each by its score,
 * from `floor`), whatever their groups. A report whose earlier paraphrases each stayed alone
 * meets their words through the one it matches best. The best member's score becomes the larger
 * of the plain and the expanded score.
 */
function memberNeighbourhood(alpha: number, floor: number, reverse: boolean): Rule {
  return {
    name: `member expanded by its neighbours (α ${alpha}, from ${floor}${reverse ? ', both directions' : ', kept matches only'})`,
    candidate(s) {
      const groups = s.matches.map((m) => s.groupOf[m.ordinal]!);
      const query = vectorOf(s.query, s.rarity);
      const scores = s.matches.map((m, i) => {
        if (groups.indexOf(groups[i]!) !== i) return m.score;
        const neighbours = [...s.kept[m.ordinal]!, ...(reverse ? s.keptBy[m.ordinal]! : [])].filter(
          (n) => n.score >= floor,
        );
        if (neighbours.length === 0) return m.score;
        const expanded = unit(vectorOf(s.documents[m.ordinal]!, s.rarity));
        for (const n of neighbours) {
          for (const [h, w] of unit(vectorOf(s.documents[n.ordinal]!, s.rarity)))
            expanded.set(h, (expanded.get(h) ?? 0) + alpha * n.score * w);
        }
        return Math.max(m.score, cosine(query, expanded));
      });
      const rescored = s.matches.map((m, i) => ({ ...m, score: scores[i]! }));
      const evidence = groupEvidence(rescored, (_m, i) => groups[i]!, SECOND);
      return withBackground(s.matches, groups, evidence);
    },
  };
}

/**
 * Shared neighbours (Jarvis and Patrick, 1973): two reports of one problem have the same
 * neighbours, whatever words each used. The candidate group's best member's neighbours (its kept
 * matches and the later deliveries that kept it) are compared with the report's own matches;
 * μ × the share of the report's matches among them is added to the confidence.
 */
function sharedNeighbours(mu: number): Rule {
  return {
    name: `shared neighbours: + ${mu} × the share of the report's matches among the best member's neighbours`,
    candidate(s) {
      const best = bestGroup(s.matches, (m) => s.groupOf[m.ordinal]!, SECOND, BACKGROUND);
      if (best === undefined) return undefined;
      const member = s.matches.find((m) => s.groupOf[m.ordinal] === best.group)!;
      const neighbours = new Set(
        [...s.kept[member.ordinal]!, ...s.keptBy[member.ordinal]!].map((n) => n.ordinal),
      );
      const shared = s.matches.filter(
        (m) => m.ordinal !== member.ordinal && neighbours.has(m.ordinal),
      ).length;
      const share = s.matches.length <= 1 ? 0 : shared / (s.matches.length - 1);
      return { group: best.group, confidence: Math.min(1, best.confidence + mu * share) };
    },
  };
}

/**
 * Mutual nearest neighbours: the report is a better match for its candidate's best member than
 * any earlier report that member kept. δ × that margin is added to the confidence.
 */
function mutualNeighbour(delta: number): Rule {
  return {
    name: `mutual neighbour: + ${delta} × how far the score passes the best member's own best kept match`,
    candidate(s) {
      const best = bestGroup(s.matches, (m) => s.groupOf[m.ordinal]!, SECOND, BACKGROUND);
      if (best === undefined) return undefined;
      const member = s.matches.find((m) => s.groupOf[m.ordinal] === best.group)!;
      const own = Math.max(
        0,
        ...s.kept[member.ordinal]!.map((k) => k.score),
        ...s.keptBy[member.ordinal]!.map((k) => k.score),
      );
      return {
        group: best.group,
        confidence: Math.min(1, best.confidence + delta * (member.score - own)),
      };
    },
  };
}

/**
 * A ceiling, not a rule (it reads the true groups): the engine's decision, but a report it leaves
 * alone joins its true group when one of its matches is in it, a group of several (`several`) or
 * any. What perfect group-level evidence could give, against a perfect decision on groups of one.
 */
function oracle(several: boolean): Rule {
  return {
    name: `ceiling: the engine, and a report left alone joins its true group among its matches when that is ${several ? 'a group of several' : 'any group, alone or not'}`,
    candidate(s) {
      const engine = baseline.candidate(s);
      if (engine !== undefined && engine.confidence >= s.threshold) return engine;
      const truth = s.truth(s.ordinal);
      const right = s.matches.find(
        (m) =>
          s.truth(m.ordinal) === truth &&
          (!several || s.members.get(s.groupOf[m.ordinal]!)!.length > 1),
      );
      return right === undefined ? engine : { group: s.groupOf[right.ordinal]!, confidence: 1 };
    },
  };
}

/**
 * Siblings: two reports written to one pattern about different things ("[De] privacy_help.xhtml:
 * Dead Link", "[De] welcome_help.xhtml: Dead Link") share everything but the word that names the
 * thing, and that word is the heaviest of each. κ × the smaller of the two shares (the heaviest
 * term of each that the other lacks, against its heaviest term) is taken off the confidence.
 */
function siblings(kappa: number): Rule {
  return {
    name: `siblings: − ${kappa} × how heavy a term each has that the other lacks`,
    candidate(s) {
      const best = bestGroup(s.matches, (m) => s.groupOf[m.ordinal]!, SECOND, BACKGROUND);
      if (best === undefined) return undefined;
      const member = s.matches.find((m) => s.groupOf[m.ordinal] === best.group)!;
      const a = vectorOf(s.query, s.rarity);
      const b = vectorOf(s.documents[member.ordinal]!, s.rarity);
      const lacking = (x: Vector, y: Vector) => {
        let top = 0;
        let missing = 0;
        for (const [h, w] of x) {
          top = Math.max(top, w);
          if (!y.has(h)) missing = Math.max(missing, w);
        }
        return top === 0 ? 0 : missing / top;
      };
      const contrast = Math.min(lacking(a, b), lacking(b, a));
      return { group: best.group, confidence: Math.max(0, best.confidence - kappa * contrast) };
    },
  };
}

interface Replayed {
  formed: number[];
  matches: SimilarMatch[][];
  /** Per report: the candidate's confidence and whether it is the report's true group. */
  decisions: { confidence: number; right: boolean }[];
}

/** Each report's stored terms and kept matches: they do not depend on the grouping. */
function indexed(rows: SimilarDataLine[]): {
  documents: CompactDocument[];
  matches: SimilarMatch[][];
} {
  const index = new SimilarityIndex();
  const documents: CompactDocument[] = [];
  const matches: SimilarMatch[][] = [];
  for (const { record } of rows) {
    const document = compactDocument(documentTerms(record), (h) => index.rarity(h));
    matches.push(index.query(document));
    documents.push(document);
    index.add(record.id, document);
  }
  return { documents, matches };
}

function replay(
  rows: SimilarDataLine[],
  { documents: allDocuments, matches: allMatches }: ReturnType<typeof indexed>,
  rule: Rule,
  threshold: number,
): Replayed {
  const groupOf: number[] = [];
  const members = new Map<number, number[]>();
  const documents: CompactDocument[] = [];
  const kept: SimilarMatch[][] = [];
  const cache = new Map<string, unknown>();
  const decisions: Replayed['decisions'] = [];
  const holding = new Map<number, number>();
  const keptBy: SimilarMatch[][] = [];
  const rarity = (h: number) => rarityOf(documents.length, holding.get(h) ?? 0);
  rows.forEach(({ group: truth }, ordinal) => {
    const query = allDocuments[ordinal]!;
    const matches = allMatches[ordinal]!;
    const candidate = rule.candidate({
      ordinal,
      query,
      matches,
      groupOf,
      members,
      documents,
      kept,
      keptBy,
      rarity,
      threshold,
      truth: (o) => rows[o]!.group,
      cache,
    });
    if (candidate !== undefined) {
      decisions.push({
        confidence: candidate.confidence,
        right: rows[candidate.group]!.group === truth,
      });
    }
    const group =
      candidate !== undefined && candidate.confidence >= threshold ? candidate.group : ordinal;
    groupOf.push(group);
    members.set(group, [...(members.get(group) ?? []), ordinal]);
    documents.push(query);
    kept.push(matches);
    keptBy.push([]);
    for (const m of matches) keptBy[m.ordinal]!.push({ id: '', ordinal, score: m.score });
    for (const h of query.hashes) holding.set(h, (holding.get(h) ?? 0) + 1);
  });
  return { formed: groupOf, matches: kept, decisions };
}

function score(rows: SimilarDataLine[], replayed: Replayed) {
  return scoreGrouping(
    rows.map((row, i) => ({
      truth: row.group,
      formed: String(replayed.formed[i]),
      matchTruths: replayed.matches[i]!.map((m) => rows[m.ordinal]!.group),
    })),
  );
}

/** Area under the ROC curve of the confidence, telling a right candidate group from a wrong one. */
function auc(decisions: { confidence: number; right: boolean }[]): number {
  const sorted = [...decisions].sort((a, b) => a.confidence - b.confidence);
  let rankSum = 0;
  let positives = 0;
  sorted.forEach((d, i) => {
    if (d.right) {
      rankSum += i + 1;
      positives += 1;
    }
  });
  const negatives = sorted.length - positives;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

const rules: Rule[] = [baseline, oracle(true), oracle(false)];
for (const gamma of [0.25, 0.5, 1])
  for (const outside of [false, true]) rules.push(memberHubness(gamma, outside));
for (const size of [80, 160]) {
  rules.push(groupProfile(size, 'max', 'max'));
  rules.push(groupProfile(size, 'centroid', 'max'));
  for (const lambda of [0.5, 1]) rules.push(groupProfile(size, 'max', 'add', lambda));
}
rules.push(groupProfile(80, 'max', 'max', 1, 3));
for (const alpha of [0.5, 1])
  for (const floor of [0.2, 0.3])
    for (const reverse of [false, true]) rules.push(memberNeighbourhood(alpha, floor, reverse));
for (const mu of [0.1, 0.2]) rules.push(sharedNeighbours(mu));
for (const kappa of [0.05, 0.1, 0.2]) rules.push(siblings(kappa));
for (const delta of [0.25, 0.5]) rules.push(mutualNeighbour(delta));
for (const beta of [0.3, 0.6, 1]) {
  rules.push(feedback(beta, 'match'));
  rules.push(feedback(beta, 'group'));
}

const fixed = (v: number) => v.toFixed(3);
const STEP = 0.0125;
const thresholds = Array.from({ length: 33 }, (_v, i) => 0.2 + STEP * i);
const files = (values.data ?? SIMILAR_DATA).map((file) => {
  const rows = readSimilarData(file);
  return { file, rows, stored: indexed(rows) };
});

for (const rule of rules) {
  if (values.rule !== undefined && !values.rule.some((r) => rule.name.includes(r))) continue;
  const results = thresholds.map((t) =>
    files.map(({ rows, stored }) => ({ t, ...score(rows, replay(rows, stored, rule, t)) })),
  );
  const cell = (r: (typeof results)[number][number]) =>
    `${fixed(r.bCubedPrecision)} / ${fixed(r.bCubedRecall)}`;
  console.log(`\n## ${rule.name}`);
  if (values.auc) {
    const aucs = files.map(({ rows, stored }) =>
      fixed(auc(replay(rows, stored, rule, 0.325).decisions)),
    );
    console.log(`AUC of the candidate's confidence at 0.325: ${aucs.join(' / ')}`);
  }
  if (values.sweep) {
    for (const row of results)
      console.log(`${row[0]!.t.toFixed(4)} | ${row.map(cell).join(' | ')}`);
  }
  let bestAt = -1;
  results.forEach((row, i) => {
    const web = row[0]!;
    if (
      web.bCubedPrecision >= 0.95 &&
      (bestAt === -1 || web.bCubedRecall > results[bestAt]![0]!.bCubedRecall)
    )
      bestAt = i;
  });
  if (bestAt === -1) {
    console.log('no threshold gives webapp precision >= 0.95');
    continue;
  }
  const at = results[bestAt]!;
  const around = [results[bestAt - 1], results[bestAt + 1]].filter((r) => r !== undefined);
  console.log(
    `best ${at[0]!.t.toFixed(4)}: ${files.map((f, i) => `${basename(f.file)} ${cell(at[i]!)} R@5/R@10 ${fixed(at[i]!.recallAt[5])}/${fixed(at[i]!.recallAt[10])}`).join('; ')}`,
  );
  console.log(
    `  one step either side (webapp): ${around.map((r) => `${r[0]!.t.toFixed(4)} ${cell(r[0]!)}`).join(', ')}`,
  );
}

/**
 * Where the engine's misses are: each report with an earlier one of its true group that the engine
 * (at 0.325) leaves alone, by whether its true group's earlier reports among its matches are all
 * groups of one, or one is in a group of several, or none is among its matches.
 */
if (values.misses) {
  for (const { file, rows, stored } of files) {
    const { formed } = replay(rows, stored, baseline, 0.325);
    const sizes = new Map<number, number>();
    const counts = {
      joinedRight: 0,
      joinedWrong: 0,
      aloneOnes: 0,
      aloneSeveral: 0,
      aloneAbsent: 0,
    };
    const seen = new Set<string>();
    rows.forEach(({ group: truth }, i) => {
      const sizeNow = (g: number) => sizes.get(g) ?? 0;
      if (seen.has(truth)) {
        if (formed[i] !== i) {
          if (rows[formed[i]!]!.group === truth) counts.joinedRight += 1;
          else counts.joinedWrong += 1;
        } else {
          const own = stored.matches[i]!.filter((m) => rows[m.ordinal]!.group === truth);
          if (own.length === 0) counts.aloneAbsent += 1;
          else if (own.some((m) => sizeNow(formed[m.ordinal]!) > 1)) counts.aloneSeveral += 1;
          else counts.aloneOnes += 1;
        }
      }
      seen.add(truth);
      sizes.set(formed[i]!, sizeNow(formed[i]!) + 1);
    });
    console.log(`${basename(file)} at 0.325: ${JSON.stringify(counts)}`);
  }
}
