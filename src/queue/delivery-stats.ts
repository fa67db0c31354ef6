/**
 * What the receivers answered, per minute and per hour, shared in Redis so the console's overview
 * sees every receiver: deliveries by outcome (queued, duplicate, quarantined, ignored, rejected
 * with its reason) and which secret position matched.
 *
 * Each process adds up its counts in memory and writes them once a second in one pipeline: the
 * answer to a sender never waits for a counter, and a busy receiver makes one write a second,
 * not one per request. A process that dies loses at most its last second of counts (only the
 * counts: a delivery is stored before it is answered).
 *
 * Each command of the pipeline is judged by its own reply, since Redis applies the others
 * whatever one of them answers: an applied command is never sent again. One that did not reach
 * Redis because the connection is lost, or that a Redis refusing writes for a while refused
 * (READONLY, OOM...), is kept for the next write, as far back as it is still read; if the
 * connection dropped after it was sent, it may have been applied too and is then counted twice.
 * A command Redis refused for good (a key of the wrong type) is dropped, since sending it again
 * cannot succeed, with a warning at most once an hour. A command that timed out is dropped: its
 * reply is lost, not necessarily its effect, so it is counted at most once.
 */
import type { Logger } from '../logger.js';
import { isRedisUnavailable, pipelineResults, type RedisConnection } from './redis.js';

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
/** How long after its start a minute and an hour are still read, and their counts worth a retry. */
const MINUTE_READ_MS = HOUR;
const HOUR_READ_MS = 24 * HOUR;
const REFUSED_WARNING_INTERVAL_MS = HOUR;

/** Counts not written yet to one key. */
interface PendingKey {
  readonly ttlSeconds: number;
  /** After this, nobody reads the key: its counts are not worth another try. */
  readonly readUntil: number;
  readonly counts: Map<string, number>;
}

/** What became of one command of the pipeline. */
type Outcome = 'applied' | 'retry' | 'timed out' | 'refused';

export function createDeliveryStats(options: {
  connection: RedisConnection;
  prefix: string;
  logger: Logger;
}): DeliveryStats {
  const { connection, prefix, logger } = options;
  /** Counts not written yet, by key: each answer counts in its minute's key and its hour's. */
  let pending = new Map<string, PendingKey>();

  const pendingKey = (key: string, ttlSeconds: number, readUntil: number) => {
    let entry = pending.get(key);
    if (!entry) pending.set(key, (entry = { ttlSeconds, readUntil, counts: new Map() }));
    return entry;
  };
  const addTo = (entry: PendingKey, field: string, count: number) =>
    entry.counts.set(field, (entry.counts.get(field) ?? 0) + count);

  const add = (field: string) => {
    const minute = Math.floor(Date.now() / MINUTE) * MINUTE;
    const hour = Math.floor(minute / HOUR) * HOUR;
    addTo(
      pendingKey(minuteKey(prefix, minute), MINUTE_TTL_SECONDS, minute + MINUTE_READ_MS),
      field,
      1,
    );
    addTo(pendingKey(hourKey(prefix, hour), HOUR_TTL_SECONDS, hour + HOUR_READ_MS), field, 1);
  };

  const outcomeOf = (error: Error | null | undefined): Outcome => {
    if (!error) return 'applied';
    // ioredis rejects a command past `commandTimeout` with a plain Error and this message only.
    if (error.message === 'Command timed out') return 'timed out';
    return isRedisUnavailable(connection, error) ? 'retry' : 'refused';
  };

  let lastRefusedWarning = -Infinity;
  const warnRefused = (refused: Error[]) => {
    if (refused.length === 0) return;
    const at = Date.now();
    const firstThisHour = at - lastRefusedWarning >= REFUSED_WARNING_INTERVAL_MS;
    if (firstThisHour) lastRefusedWarning = at;
    logger[firstThisHour ? 'warn' : 'debug'](
      { error: refused[0]!.message, refused: refused.length },
      'Redis refused delivery counts; they are dropped (warned at most once an hour)',
    );
  };

  let flushing: Promise<void> | undefined;
  async function write(): Promise<void> {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const pipeline = connection.pipeline();
    /** For each command, what to keep if it must be sent again: a count, or only the EXPIRE. */
    const sent: { key: string; entry: PendingKey; field?: string; count?: number }[] = [];
    for (const [key, entry] of batch) {
      for (const [field, count] of entry.counts) {
        pipeline.hincrby(key, field, count);
        sent.push({ key, entry, field, count });
      }
      pipeline.expire(key, entry.ttlSeconds);
      sent.push({ key, entry });
    }
    let replies: [Error | null, unknown][];
    try {
      replies = (await pipeline.exec()) ?? [];
    } catch (error) {
      // The pipeline as a whole failed (a cluster without slots yet): every command shares it.
      const failure = error instanceof Error ? error : new Error(String(error));
      replies = sent.map(() => [failure, undefined]);
    }
    const now = Date.now();
    const refused: Error[] = [];
    let lost = 0;
    let kept = 0;
    for (const [index, { key, entry, field, count }] of sent.entries()) {
      const error = replies[index]?.[0] ?? null;
      const outcome = outcomeOf(error);
      if (outcome === 'refused') refused.push(error!);
      if (outcome === 'timed out') lost += 1;
      if (outcome !== 'retry' || entry.readUntil < now) continue;
      // An empty entry still sends its EXPIRE, so no key is left without one.
      const again = pendingKey(key, entry.ttlSeconds, entry.readUntil);
      if (field !== undefined) addTo(again, field, count!);
      kept += 1;
    }
    warnRefused(refused);
    if (lost > 0 || kept > 0) {
      logger.debug({ timedOut: lost, kept }, 'delivery stats not all written');
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
