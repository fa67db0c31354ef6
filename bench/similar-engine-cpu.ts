/**
 * What the in-memory engine (src/similar) computes, and the CPU it takes: the shared reports
 * replayed through one SimilarGrouper `--passes` times (3 by default, so that later passes find
 * their terms common and read them in part, as a busy project does), then printing a SHA-256 of
 * every record's group, matches (ids and scores, to the last bit) and kept terms, and the CPU
 * time a record took. A change meant to make grouping cheaper must print the same digest.
 *
 * `--postings N` and `--shortlist N` set the query's bounds (QueryBounds);
 * `--against-exact` replays again with every posting read (no bound: the exact TF-IDF search)
 * and counts the records whose matches or group differ from it, untimed; `--dump file` writes
 * each record's group and matches' ids, a line each, for comparing runs.
 *
 *   npm run build && tsc -p bench && flock /work/bench.lock node dist-bench/bench/similar-engine-cpu.js [--passes 3]
 *     [--postings 256] [--shortlist 200] [--against-exact] [--dump file]
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SimilarGrouper, type SimilarOutcome } from '../src/similar/similar-grouper.js';
import type { QueryBounds } from '../src/similar/similarity-index.js';
import { readSimilarData, SIMILAR_DATA } from './similar-data.js';

const { values } = parseArgs({
  options: {
    passes: { type: 'string', default: '3' },
    postings: { type: 'string' },
    shortlist: { type: 'string' },
    'against-exact': { type: 'boolean', default: false },
    dump: { type: 'string' },
  },
});
const passes = Number(values.passes);
const bounds: QueryBounds = {
  ...(values.postings === undefined ? {} : { postingsPerTerm: Number(values.postings) }),
  ...(values.shortlist === undefined ? {} : { shortlist: Number(values.shortlist) }),
};
const lines = SIMILAR_DATA.flatMap((file) => readSimilarData(file));

function replay(grouper: SimilarGrouper, each: (outcome: SimilarOutcome) => void): void {
  for (let pass = 0; pass < passes; pass += 1) {
    lines.forEach((line, i) => each(grouper.add(`${pass}-${i}`, line.record)));
  }
}

const digest = createHash('sha256');
const outcomes: SimilarOutcome[] = [];
const started = process.cpuUsage();
replay(new SimilarGrouper({ bounds }), (outcome) => {
  const { group, matches, document } = outcome;
  const found = matches.map((match) => `${match.id}:${match.score}`).join(' ');
  digest.update(`${group} ${found} ${document.hashes.join(',')}|${document.counts.join(',')}\n`);
  if (values['against-exact'] || values.dump) outcomes.push(outcome);
});
const cpu = process.cpuUsage(started);
const records = passes * lines.length;
console.log(`${records} records, digest ${digest.digest('hex')}`);
console.log(`${((cpu.user + cpu.system) / records).toFixed(0)} µs CPU a record`);

if (values.dump) {
  // One line a record: its group, then its matches' ids, best first.
  const lines = outcomes.map(
    ({ group, matches }) => `${group} ${matches.map((m) => m.id).join(' ')}`,
  );
  writeFileSync(values.dump, `${lines.join('\n')}\n`);
}

if (values['against-exact']) {
  let otherMatches = 0;
  let otherBest = 0;
  let otherGroup = 0;
  let at = 0;
  replay(new SimilarGrouper({ bounds: { postingsPerTerm: Infinity } }), (exact) => {
    const bounded = outcomes[at++]!;
    const ids = (outcome: SimilarOutcome) => outcome.matches.map((match) => match.id).join(' ');
    if (ids(bounded) !== ids(exact)) otherMatches += 1;
    if (bounded.matches[0]?.id !== exact.matches[0]?.id) otherBest += 1;
    if (bounded.group !== exact.group) otherGroup += 1;
  });
  console.log(
    `against the exact search: matches differ ${otherMatches}, best match differs ${otherBest}, group differs ${otherGroup} (of ${records})`,
  );
}
