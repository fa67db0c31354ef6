/**
 * What the in-memory engine (src/similar) computes, and the CPU it takes: the shared reports
 * replayed through one SimilarGrouper `--passes` times (3 by default, so that later passes find
 * their terms common and read them in part, as a busy project does), then printing a SHA-256 of
 * every record's group, matches (ids and scores, to the last bit) and kept terms, and the CPU
 * time a record took. A change meant to make grouping cheaper must print the same digest.
 *
 *   npm run build && tsc -p bench && flock /work/bench.lock node dist-bench/bench/similar-engine-cpu.js [--passes 3]
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SimilarGrouper } from '../src/similar/similar-grouper.js';
import { readSimilarData, SIMILAR_DATA } from './similar-data.js';

const { values } = parseArgs({ options: { passes: { type: 'string', default: '3' } } });
const passes = Number(values.passes);
const lines = SIMILAR_DATA.flatMap((file) => readSimilarData(file));
const grouper = new SimilarGrouper();
const digest = createHash('sha256');
const started = process.cpuUsage();
for (let pass = 0; pass < passes; pass += 1) {
  lines.forEach((line, i) => {
    const { group, matches, document } = grouper.add(`${pass}-${i}`, line.record);
    const found = matches.map((match) => `${match.id}:${match.score}`).join(' ');
    digest.update(`${group} ${found} ${document.hashes.join(',')}|${document.counts.join(',')}\n`);
  });
}
const cpu = process.cpuUsage(started);
const records = passes * lines.length;
console.log(`${records} records, digest ${digest.digest('hex')}`);
console.log(`${((cpu.user + cpu.system) / records).toFixed(0)} µs CPU a record`);
