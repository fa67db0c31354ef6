/**
 * Offline measure of similar-feedback grouping (issue 30): replays JSON-lines files of
 * `{"group": ..., "record": ...}` in their order through the in-memory engine (src/similar), no
 * Redis and no processes, and prints Recall@1/5/10 at group level, B-cubed precision and recall of
 * the groups formed, the number of groups against the true number, bytes per document, and the
 * time one record takes (terms, query, grouping) with 10 000 and 100 000 records kept.
 *
 *   npm run build && tsc -p bench && node dist-bench/bench/similar-offline.js [--data file]...
 *     [--threshold 0.425] [--second-weight 0.5] [--background-weight 0.5] [--sweep] [--max-terms 80] [--title-weight 2] [--pair-weight 0.5]
 *     [--piece-weight 0.25] [--url-weight 2] [--prefix 4] [--no-timing]
 *     [--prefill 10000] [--postings 256] [--shortlist 200]
 *
 * `--prefill N` adds N synthetic reports (the timing's, below: the files' words drawn by a seeded
 * Zipf, each a group of its own) before each file, so the file's terms are as common as in a
 * project of N deliveries and the query's bounds (`--postings`, `--shortlist`: see
 * QueryBounds) cut in; the figures are the file's reports' alone.
 *
 * Timing runs must hold the bench lock: `flock -x /work/bench.lock node dist-bench/...`.
 */
import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  decodeCompactDocument,
  encodeCompactDocument,
  MAX_TERMS,
  type CompactDocument,
} from '../src/similar/compact-document.js';
import { DEFAULT_TERM_OPTIONS, type TermOptions } from '../src/similar/document-terms.js';
import type { SimilarRecord } from '../src/similar/considered-text.js';
import {
  BACKGROUND_WEIGHT,
  DEFAULT_SIMILAR_THRESHOLD,
  SECOND_MEMBER_WEIGHT,
} from '../src/similar/grouping.js';
import { SimilarGrouper } from '../src/similar/similar-grouper.js';
import type { QueryBounds } from '../src/similar/similarity-index.js';
import { readSimilarData, SIMILAR_DATA, type SimilarDataLine } from './similar-data.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', multiple: true },
    threshold: { type: 'string' },
    sweep: { type: 'boolean', default: false },
    'second-weight': { type: 'string' },
    'background-weight': { type: 'string' },
    'max-terms': { type: 'string' },
    'title-weight': { type: 'string' },
    'pair-weight': { type: 'string' },
    'piece-weight': { type: 'string' },
    'url-weight': { type: 'string' },
    prefix: { type: 'string' },
    'no-timing': { type: 'boolean', default: false },
    prefill: { type: 'string' },
    postings: { type: 'string' },
    shortlist: { type: 'string' },
  },
});

const number = (value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed)) {
    console.error(`similar-offline: "${value}" is not a number`);
    process.exit(2);
  }
  return parsed;
};

const threshold = number(values.threshold, DEFAULT_SIMILAR_THRESHOLD);
const secondMemberWeight = number(values['second-weight'], SECOND_MEMBER_WEIGHT);
const backgroundWeight = number(values['background-weight'], BACKGROUND_WEIGHT);
const maxTerms = number(values['max-terms'], MAX_TERMS);
const prefill = number(values.prefill, 0);
const bounds: QueryBounds = {
  ...(values.postings === undefined ? {} : { postingsPerTerm: number(values.postings, 0) }),
  ...(values.shortlist === undefined ? {} : { shortlist: number(values.shortlist, 0) }),
};
const terms: TermOptions = {
  titleWeight: number(values['title-weight'], DEFAULT_TERM_OPTIONS.titleWeight),
  pairWeight: number(values['pair-weight'], DEFAULT_TERM_OPTIONS.pairWeight),
  pieceWeight: number(values['piece-weight'], DEFAULT_TERM_OPTIONS.pieceWeight),
  urlWeight: number(values['url-weight'], DEFAULT_TERM_OPTIONS.urlWeight),
  prefixLength: number(values.prefix, DEFAULT_TERM_OPTIONS.prefixLength),
};

type Row = SimilarDataLine;

interface Replay {
  recallAt: Record<1 | 5 | 10, number>;
  withEarlier: number;
  precision: number;
  recall: number;
  formedGroups: number;
  trueGroups: number;
  bytesMean: number;
  bytesMax: number;
  /** Mean µs to encode and to decode one document. */
  coding: { encodeUs: number; decodeUs: number };
}

function replay(rows: Row[], atThreshold: number): Replay {
  const grouper = new SimilarGrouper({
    threshold: atThreshold,
    secondMemberWeight,
    backgroundWeight,
    maxTerms,
    terms,
    bounds,
  });
  const synthetic = syntheticReports(vocabulary);
  for (let i = 0; i < prefill; i += 1) grouper.addAlone(`prefill-${i}`, synthetic());
  const trueGroupOf = new Map<string, string>();
  const seenGroups = new Set<string>();
  const hits = { 1: 0, 5: 0, 10: 0 };
  let withEarlier = 0;
  const formed: string[] = [];
  let bytes = 0;
  let bytesMax = 0;
  const documents: CompactDocument[] = [];
  for (const { group, record } of rows) {
    const outcome = grouper.add(record.id, record);
    documents.push(outcome.document);
    const size = encodeCompactDocument(outcome.document).byteLength;
    bytes += size;
    bytesMax = Math.max(bytesMax, size);
    if (seenGroups.has(group)) {
      withEarlier += 1;
      const ranked: string[] = [];
      for (const match of outcome.matches) {
        // A synthetic report is a group of its own.
        const matchGroup = trueGroupOf.get(match.id) ?? match.id;
        if (!ranked.includes(matchGroup)) ranked.push(matchGroup);
      }
      const at = ranked.indexOf(group);
      for (const k of [1, 5, 10] as const) if (at !== -1 && at < k) hits[k] += 1;
    }
    seenGroups.add(group);
    trueGroupOf.set(record.id, group);
    formed.push(outcome.group);
  }
  const { precision, recall } = bCubed(
    rows.map((row) => row.group),
    formed,
  );
  return {
    recallAt: { 1: hits[1] / withEarlier, 5: hits[5] / withEarlier, 10: hits[10] / withEarlier },
    withEarlier,
    precision,
    recall,
    formedGroups: new Set(formed).size,
    trueGroups: seenGroups.size,
    bytesMean: bytes / rows.length,
    bytesMax,
    coding: codingTime(documents),
  };
}

/**
 * Mean µs to encode and to decode one compact document (decoding runs for every entry a worker's
 * index reads), over these documents, repeated so the clock's resolution does not matter.
 */
function codingTime(documents: readonly CompactDocument[]): { encodeUs: number; decodeUs: number } {
  const rounds = 20;
  const encoded = documents.map((document) => encodeCompactDocument(document));
  let started = performance.now();
  for (let r = 0; r < rounds; r += 1)
    for (const document of documents) encodeCompactDocument(document);
  const encodeUs = ((performance.now() - started) * 1000) / (rounds * documents.length);
  started = performance.now();
  for (let r = 0; r < rounds; r += 1) for (const bytes of encoded) decodeCompactDocument(bytes);
  const decodeUs = ((performance.now() - started) * 1000) / (rounds * documents.length);
  return { encodeUs, decodeUs };
}

/** B-cubed: per item, the share of its formed cluster in its true class, and the reverse. */
function bCubed(truth: string[], formed: string[]): { precision: number; recall: number } {
  const pairCount = new Map<string, number>();
  const truthCount = new Map<string, number>();
  const formedCount = new Map<string, number>();
  const increment = (map: Map<string, number>, key: string) =>
    map.set(key, (map.get(key) ?? 0) + 1);
  truth.forEach((t, i) => {
    increment(truthCount, t);
    increment(formedCount, formed[i]!);
    increment(pairCount, `${t}\u0000${formed[i]!}`);
  });
  let precision = 0;
  let recall = 0;
  truth.forEach((t, i) => {
    const both = pairCount.get(`${t}\u0000${formed[i]!}`)!;
    precision += both / formedCount.get(formed[i]!)!;
    recall += both / truthCount.get(t)!;
  });
  return { precision: precision / truth.length, recall: recall / truth.length };
}

const fixed = (value: number, digits = 3) => value.toFixed(digits);
const vocabulary = rowsForTiming();

console.log(
  `options: threshold ${threshold}, second member weight ${secondMemberWeight}, background weight ${backgroundWeight}, max terms ${maxTerms}, title weight ${terms.titleWeight}, ` +
    `pair weight ${terms.pairWeight}, piece weight ${terms.pieceWeight}, url weight ${terms.urlWeight}, prefix ${terms.prefixLength}` +
    `, prefill ${prefill}, bounds ${JSON.stringify(bounds)}`,
);
for (const file of values.data ?? SIMILAR_DATA) {
  const rows = readSimilarData(file);
  const result = replay(rows, threshold);
  console.log(
    `\n## ${basename(file)}: ${rows.length} reports, ${result.withEarlier} with an earlier one in their group`,
  );
  console.log(
    `Recall@1 ${fixed(result.recallAt[1])}  Recall@5 ${fixed(result.recallAt[5])}  Recall@10 ${fixed(result.recallAt[10])}`,
  );
  console.log(
    `B-cubed precision ${fixed(result.precision)} recall ${fixed(result.recall)} at threshold ${threshold}; ` +
      `${result.formedGroups} groups formed, ${result.trueGroups} true`,
  );
  console.log(
    `bytes per document: mean ${fixed(result.bytesMean, 1)}, max ${result.bytesMax}; ` +
      `encode ${fixed(result.coding.encodeUs, 2)} µs, decode ${fixed(result.coding.decodeUs, 2)} µs`,
  );
  if (values.sweep) {
    console.log('threshold | B³ precision | B³ recall | groups');
    for (let t = 0.15; t <= 0.601; t += 0.025) {
      const swept = replay(rows, t);
      console.log(
        `${fixed(t, 3)} | ${fixed(swept.precision)} | ${fixed(swept.recall)} | ${swept.formedGroups}`,
      );
    }
  }
}

if (!values['no-timing']) {
  const timing = measureTiming(vocabulary);
  console.log('\n## time per record (terms, query, grouping), synthetic reports');
  for (const { kept, p50, p95, max, cpuP50, cpuP95 } of timing) {
    console.log(
      `${kept} kept: p50 ${fixed(p50, 2)} ms, p95 ${fixed(p95, 2)} ms, max ${fixed(max, 2)} ms ` +
        `(CPU time p50 ${fixed(cpuP50, 2)} ms, p95 ${fixed(cpuP95, 2)} ms)`,
    );
  }
}

function rowsForTiming(): SimilarRecord[] {
  // Real words (both files' vocabulary) in synthetic reports: each draws its title and
  // description from a seeded Zipf over the words, so postings are as long as real ones get.
  const words = new Map<string, number>();
  for (const file of SIMILAR_DATA) {
    for (const { record } of readSimilarData(file)) {
      for (const word of `${record.title ?? ''} ${record.description ?? ''}`.split(/\s+/)) {
        if (word !== '') words.set(word, (words.get(word) ?? 0) + 1);
      }
    }
  }
  return [...words]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([word]) => ({ title: word }));
}

/** Synthetic reports of 8 + 80 words and a URL of 2, drawn from `vocabulary` by a seeded Zipf. */
function syntheticReports(vocabulary: SimilarRecord[]): () => SimilarRecord {
  const vocab = vocabulary.map((v) => v.title as string);
  let seed = 1;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  // Cumulative Zipf weights, searched by bisection: one draw costs log(vocabulary).
  const cumulative = new Float64Array(vocab.length);
  let total = 0;
  vocab.forEach((_word, i) => {
    total += 1 / (i + 1);
    cumulative[i] = total;
  });
  const zipfWord = () => {
    const target = random() * total;
    let low = 0;
    let high = vocab.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return vocab[low]!;
  };
  return () => ({
    title: Array.from({ length: 8 }, zipfWord).join(' '),
    description: Array.from({ length: 80 }, zipfWord).join(' '),
    url: `https://example.com/${zipfWord()}/${zipfWord()}`,
  });
}

function measureTiming(
  vocabulary: SimilarRecord[],
): { kept: number; p50: number; p95: number; max: number; cpuP50: number; cpuP95: number }[] {
  const report = syntheticReports(vocabulary);
  const grouper = new SimilarGrouper({
    threshold,
    secondMemberWeight,
    backgroundWeight,
    maxTerms,
    terms,
    bounds,
  });
  const results: {
    kept: number;
    p50: number;
    p95: number;
    max: number;
    cpuP50: number;
    cpuP95: number;
  }[] = [];
  let id = 0;
  for (const kept of [10_000, 100_000]) {
    while (grouper.index.size < kept) grouper.addAlone(`fill-${id++}`, report());
    const samples: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < 500; i += 1) {
      const record = report();
      const cpuStarted = process.cpuUsage();
      const started = performance.now();
      grouper.add(`timed-${id++}`, record);
      samples.push(performance.now() - started);
      const used = process.cpuUsage(cpuStarted);
      cpu.push((used.user + used.system) / 1000);
    }
    cpu.sort((a, b) => a - b);
    samples.sort((a, b) => a - b);
    results.push({
      kept,
      p50: percentile(samples, 50),
      p95: percentile(samples, 95),
      max: samples[samples.length - 1]!,
      cpuP50: percentile(cpu, 50),
      cpuP95: percentile(cpu, 95),
    });
  }
  return results;
}
