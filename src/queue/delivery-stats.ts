/**
 * What the receivers answered, per minute and per hour, shared in Redis so the console's overview
 * sees every receiver: deliveries by outcome (queued, duplicate, quarantined, ignored, rejected
 * with its reason) and which secret position matched.
 *
 * Each process adds up its counts in memory and writes them once a second in one pipeline: the
 * answer to a sender never waits for a counter, and a busy receiver makes one write a second,
 * not one per request. A process that dies loses at most its last second of counts (only the
 * counts: a delivery is stored before it is answered).
 */
import type { Logger } from '../logger.js';
import { pipelineResults, type RedisConnection } from './redis.js';

export interface DeliveryStats {
  /** One answer: its outcome, and for a refusal its reason. */
  count(outcome: string, reason?: string): void;
  /** A signature accepted with the secret at this position (0: the first). */
  secretMatched(index: number): void;
  /** Stops the timer and writes the rest. */
  close(): Promise<void>;
}

export type Counts = Readonly<Record<string, number>>;

export interface StatsSnapshot {
  /** The last 60 minutes, oldest first; `minute` is its start, ISO 8601 UTC. */
  readonly perMinute: readonly { readonly minute: string; readonly counts: Counts }[];
  readonly lastHour: Counts;
  /** The last 24 hours, by whole hours (the current one included). */
  readonly lastDay: Counts;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Minute counts are read for an hour, hour counts for a day; each is kept a little longer. */
const MINUTE_TTL_SECONDS = 2 * 60 * 60;
const HOUR_TTL_SECONDS = 26 * 60 * 60;

const minuteKey = (prefix: string, start: number) => `${prefix}:stats:minute:${start}`;
const hourKey = (prefix: string, start: number) => `${prefix}:stats:hour:${start}`;

export function createDeliveryStats({
  connection,
  prefix,
  logger,
}: {
  connection: RedisConnection;
  prefix: string;
  logger: Logger;
}): DeliveryStats {
  /** Counts not written yet, by the minute they happened in. */
  let pending = new Map<number, Map<string, number>>();

  const add = (field: string) => {
    const minute = Math.floor(Date.now() / MINUTE) * MINUTE;
    let counts = pending.get(minute);
    if (!counts) pending.set(minute, (counts = new Map()));
    counts.set(field, (counts.get(field) ?? 0) + 1);
  };

  let flushing: Promise<void> | undefined;
  async function write(): Promise<void> {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const pipeline = connection.pipeline();
    for (const [minute, counts] of batch) {
      const hour = Math.floor(minute / HOUR) * HOUR;
      for (const [field, count] of counts) {
        pipeline.hincrby(minuteKey(prefix, minute), field, count);
        pipeline.hincrby(hourKey(prefix, hour), field, count);
      }
      pipeline.expire(minuteKey(prefix, minute), MINUTE_TTL_SECONDS);
      pipeline.expire(hourKey(prefix, hour), HOUR_TTL_SECONDS);
    }
    try {
      pipelineResults(await pipeline.exec());
    } catch (error) {
      // Redis is away: keep the counts for the next try, as far back as they are still read.
      const oldest = Date.now() - HOUR;
      for (const [minute, counts] of batch) {
        if (minute < oldest) continue;
        const merged = pending.get(minute) ?? new Map<string, number>();
        for (const [field, count] of counts) merged.set(field, (merged.get(field) ?? 0) + count);
        pending.set(minute, merged);
      }
      logger.debug(
        { error: error instanceof Error ? error.message : String(error) },
        'delivery stats not written yet',
      );
    }
  }
  const flush = () => (flushing ??= write().finally(() => (flushing = undefined)));

  const timer = setInterval(() => void flush(), 1_000);
  timer.unref();

  return {
    count: (outcome, reason) => add(reason ? `${outcome}:${reason}` : outcome),
    secretMatched: (index) => add(`secret:${index}`),
    async close() {
      clearInterval(timer);
      await flushing;
      await flush();
    },
  };
}

/** The last hour by minute, and the totals of the last hour and of the last day. */
export async function readDeliveryStats(
  connection: RedisConnection,
  prefix: string,
): Promise<StatsSnapshot> {
  const at = Date.now();
  const thisMinute = Math.floor(at / MINUTE) * MINUTE;
  const thisHour = Math.floor(at / HOUR) * HOUR;
  const minutes = Array.from({ length: 60 }, (_, index) => thisMinute - (59 - index) * MINUTE);
  const hours = Array.from({ length: 24 }, (_, index) => thisHour - (23 - index) * HOUR);
  const pipeline = connection.pipeline();
  for (const minute of minutes) pipeline.hgetall(minuteKey(prefix, minute));
  for (const hour of hours) pipeline.hgetall(hourKey(prefix, hour));
  const hashes = pipelineResults(await pipeline.exec()).map((hash) =>
    toCounts(hash as Record<string, string>),
  );
  const perMinute = minutes.map((minute, index) => ({
    minute: new Date(minute).toISOString(),
    counts: hashes[index]!,
  }));
  return {
    perMinute,
    lastHour: sum(perMinute.map((entry) => entry.counts)),
    lastDay: sum(hashes.slice(60)),
  };
}

function toCounts(hash: Record<string, string>): Counts {
  return Object.fromEntries(Object.entries(hash).map(([field, count]) => [field, Number(count)]));
}

function sum(all: readonly Counts[]): Counts {
  const total: Record<string, number> = {};
  for (const counts of all) {
    for (const [field, count] of Object.entries(counts)) total[field] = (total[field] ?? 0) + count;
  }
  return total;
}
