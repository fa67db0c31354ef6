/**
 * Similar feedback through the real processes (issue 30): `feedback-receiver serve` and
 * `feedback-receiver work` on the server's core, every report of a data file sent in the file's
 * order as a signed delivery, and what grouping made of it read back from the admin API.
 *
 * - Quality: each report is sent once the one before it is grouped, so each is compared with
 *   exactly the reports before it, as the data file's README scores it (similar-scores.ts).
 * - Time: the worker's own histogram of the time grouping adds to a routing
 *   (`feedback_receiver_similar_seconds`), read from its /metrics before and after a timed batch,
 *   with 10 000 and then 100 000 deliveries kept; p50 and p95 within the histogram's buckets.
 * - Memory: MEMORY USAGE of grouping's keys, per delivery kept.
 * - The worker's paired ratio to bare BullMQ (worker-paired.ts) with grouping on and off.
 */
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { freePort } from '../src/cli/free-port.js';
import { createDeliveryQueue } from '../src/queue/deliveries-queue.js';
import { interpretPayload } from '../src/webhooks/delivery.js';
import { keyOfRecord } from '../src/webhooks/delivery.js';
import { signHmacSha256 } from '../src/webhooks/hmac-sha256.js';
import type { Pinning } from './pinning.js';
import { CLI, here, startReceiverUnderTest, startServer, type Server } from './processes.js';
import { scoreGrouping, type GroupingScores, type ScoredReport } from './similar-scores.js';
import { readSimilarData, type SimilarDataLine } from './similar-data.js';
import { median } from './stats.js';
import { benchWorkerPaired, type PairedWorkerOptions } from './worker-paired.js';

export interface SimilarBenchOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly pinning: Pinning;
  /** JSON-lines files of `{"group": ..., "record": ...}`. */
  readonly data: readonly string[];
  /** Deliveries kept before each timed batch, ascending: 10 000 and 100 000. */
  readonly kept: readonly number[];
  /** Deliveries in each timed batch. */
  readonly timed: number;
  readonly paired: Omit<PairedWorkerOptions, 'oursEnv' | 'redis' | 'redisUrl' | 'pinning'>;
}

export interface SimilarTiming {
  readonly kept: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

export interface SimilarBenchResult {
  readonly files: {
    readonly file: string;
    readonly reports: number;
    readonly scores: GroupingScores;
  }[];
  readonly timing: SimilarTiming[];
  /** Redis memory of grouping's keys per delivery kept, bytes. */
  readonly bytesPerDelivery: number;
  /** Median paired ratios to bare BullMQ. */
  readonly ratio: { readonly on: number; readonly off: number };
}

type DataLine = SimilarDataLine<Record<string, unknown> & { id: string }>;

const SECRET = 'bench-similar-secret-0123456789';
const TOKEN = 'bench-similar-token';
const GROUPED_WITHIN_MS = 30_000;
const METRIC = 'feedback_receiver_similar_seconds';
const NO_OP_HANDLER = here('../../bench/no-op-handler.mjs');

export async function benchSimilar(options: SimilarBenchOptions): Promise<SimilarBenchResult> {
  const files = [];
  for (const [index, file] of options.data.entries()) {
    const lines = readSimilarData<DataLine['record']>(file);
    const reports = await replay(options, `bench-similar-${index}`, lines);
    files.push({ file: basename(file), reports: lines.length, scores: scoreGrouping(reports) });
    process.stderr.write(`similar   ${basename(file)}: ${JSON.stringify(files.at(-1)!.scores)}\n`);
  }
  const { timing, bytesPerDelivery } = await timeGrouping(
    options,
    options.data.flatMap((file) => readSimilarData<DataLine['record']>(file)),
  );
  const paired = async (similar: 'on' | 'off') =>
    median(
      (
        await benchWorkerPaired({
          ...options.paired,
          redis: options.redis,
          redisUrl: options.redisUrl,
          pinning: options.pinning,
          oursEnv: { SIMILAR: similar },
        })
      ).map((round) => round.ratio),
    );
  const ratio = { off: await paired('off'), on: await paired('on') };
  return { files, timing, bytesPerDelivery, ratio };
}

/** Sends each report once the one before it is grouped; what each was grouped with. */
async function replay(
  options: SimilarBenchOptions,
  prefix: string,
  lines: readonly DataLine[],
): Promise<ScoredReport[]> {
  const { receiver, worker } = await startBoth(options, prefix);
  try {
    const truthOf = new Map<string, string>();
    const reports: ScoredReport[] = [];
    for (const { group, record } of lines) {
      const key = keyOfRecord(record.id);
      truthOf.set(key, group);
      await send(receiver.url, record);
      const similar = await groupedAs(receiver.url, key);
      reports.push({
        truth: group,
        formed: similar.group.id,
        matchTruths: similar.matches.map(
          (match) => truthOf.get(match.key) ?? `unknown:${match.key}`,
        ),
      });
    }
    return reports;
  } finally {
    await Promise.all([receiver.stop(), worker.stop()]);
  }
}

/** The time grouping adds, with `kept` deliveries kept; deliveries queued directly, in bulk. */
async function timeGrouping(
  options: SimilarBenchOptions,
  lines: readonly DataLine[],
): Promise<{ timing: SimilarTiming[]; bytesPerDelivery: number }> {
  const prefix = 'bench-similar-timed';
  const metricsPort = await freePort();
  const worker = await startWork(options, prefix, metricsPort);
  const queue = createDeliveryQueue({
    connection: options.redis,
    prefix,
    dedupeTtlSeconds: 86_400,
  });
  let queued = 0;
  const next = () => {
    const { record } = lines[queued % lines.length]!;
    // Each report again under an id of its own, in one project: the vocabulary of real reports.
    const body = JSON.stringify({
      ...record,
      id: `${record.id}~${queued}`,
      project_id: 'prj_bench',
    });
    const outcome = interpretPayload(Buffer.from(body), { receivedAt: new Date() });
    if (outcome.kind !== 'delivery') throw new Error('a data line is not a delivery');
    queued += 1;
    return queue.enqueue(outcome.delivery);
  };
  const routed = async (total: number) => {
    const deadline = Date.now() + 30 * 60_000;
    while ((await histogram(metricsPort)).at(-1)![1] < total) {
      if (Date.now() > deadline) throw new Error(`similar bench: ${total} not routed in 30 min`);
      await sleep(5);
    }
  };
  try {
    const timing: SimilarTiming[] = [];
    for (const kept of options.kept) {
      // Filled in bulk, then timed one delivery at a time: the time a delivery's grouping takes,
      // not the time it waits behind the others of its project (their grouping takes turns).
      while (queued < kept) await next();
      await routed(kept);
      const before = await histogram(metricsPort);
      for (let n = 0; n < options.timed; n += 1) {
        await next();
        await routed(queued);
      }
      const after = await histogram(metricsPort);
      const batch = after.map(([le, count], i) => [le, count - before[i]![1]] as const);
      timing.push({
        kept,
        p50Ms: quantile(batch, 0.5) * 1000,
        p95Ms: quantile(batch, 0.95) * 1000,
      });
      process.stderr.write(`similar   ${JSON.stringify(timing.at(-1))}\n`);
    }
    const bytes = await memoryOf(options.redis, `${prefix}:similar`);
    return { timing, bytesPerDelivery: bytes / queued };
  } finally {
    await queue.close();
    await worker.stop();
  }
}

async function startBoth(
  options: SimilarBenchOptions,
  prefix: string,
): Promise<{ receiver: Server; worker: Server }> {
  const receiver = await startReceiverUnderTest(options.pinning, await freePort(), {
    secret: SECRET,
    redisUrl: options.redisUrl,
    prefix,
    env: { ADMIN_TOKEN: TOKEN, SIMILAR: 'on' },
  });
  const worker = await startWork(options, prefix, await freePort()).catch(async (error) => {
    await receiver.stop();
    throw error;
  });
  return { receiver, worker };
}

/** `feedback-receiver work` with one no-op handler; ready once its metrics port listens. */
function startWork(options: SimilarBenchOptions, prefix: string, metricsPort: number) {
  return startServer(options.pinning, [CLI, 'work'], metricsPort, {
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: prefix,
    HANDLERS: NO_OP_HANDLER,
    SIMILAR: 'on',
    METRICS_PORT: String(metricsPort),
    NODE_ENV: 'production',
  });
}

async function send(url: string, record: Record<string, unknown>): Promise<void> {
  const body = JSON.stringify(record);
  const response = await fetch(`${url}/webhooks/feedback`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-ybug-signature': signHmacSha256(body, SECRET),
    },
    body,
  });
  if (response.status !== 202) throw new Error(`the receiver answered ${response.status}`);
}

interface SimilarAnswer {
  readonly group: { readonly id: string };
  readonly matches: readonly { readonly key: string }[];
}

/** The delivery's `similar`, polled from the admin API until its routing grouped it. */
async function groupedAs(url: string, key: string): Promise<SimilarAnswer> {
  const deadline = Date.now() + GROUPED_WITHIN_MS;
  for (;;) {
    const response = await fetch(`${url}/admin/api/deliveries/${encodeURIComponent(key)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    if (response.ok) {
      const { similar } = (await response.json()) as { similar?: SimilarAnswer };
      if (similar) return similar;
    } else if (response.status !== 404) {
      throw new Error(`the admin API answered ${response.status} for ${key}`);
    }
    if (Date.now() > deadline) throw new Error(`${key} was not grouped within 30 s`);
    await sleep(5);
  }
}

/** The cumulative buckets of the worker's grouping histogram: [upper bound, count]. */
async function histogram(port: number): Promise<(readonly [number, number])[]> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const buckets = [
    ...text.matchAll(new RegExp(`^${METRIC}_bucket\\{le="([^"]+)"\\} (\\d+)`, 'gm')),
  ];
  if (buckets.length === 0) throw new Error(`the worker's /metrics has no ${METRIC}`);
  return buckets.map((m) => [m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])] as const);
}

/** A quantile from cumulative buckets, linear within the bucket it falls in. */
function quantile(buckets: readonly (readonly [number, number])[], q: number): number {
  const total = buckets.at(-1)![1];
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return lower;
      return lower + ((le - lower) * (rank - below)) / Math.max(count - below, 1);
    }
    lower = le;
    below = count;
  }
  return lower;
}

/** MEMORY USAGE summed over the keys under `prefix:`. */
async function memoryOf(redis: Redis, prefix: string): Promise<number> {
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) bytes += (await redis.memory('USAGE', key, 'SAMPLES', '0')) ?? 0;
  } while (cursor !== '0');
  return bytes;
}
