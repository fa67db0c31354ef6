/**
 * Writes the history (delivery-history.ts) from the worker: an entry when a delivery is routed,
 * a line when one of its runs finishes. Writes wait at most FLUSH_EVERY_MS and go out together,
 * one script call per batch, so a delivery costs its worker a small share of one round trip; no
 * run waits for them. One batch is in flight at a time, and the lines held, waiting or in that
 * batch, are bounded (MOST_HELD): while Redis is slow or away, lines past the bound are dropped,
 * and the writer says so when it starts dropping and how many once it keeps up again. The
 * history is for operators: a write that fails is logged and dropped (the delivery and its runs
 * are in their jobs all the same), and a worker that dies loses what it had not yet written,
 * never a delivery. It keeps at most `mostKept` entries (HISTORY_MAX_DELIVERIES): each batch drops
 * the oldest past it (the script), and the writer warns of it at most once an hour.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../logger.js';
import type { RedisConnection } from '../queue/redis.js';
import { keyOfRecord, type Delivery } from '../webhooks/delivery.js';
import {
  dayOf,
  expiryOfDay,
  historyKeys,
  keptDays,
  MOST_KEPT,
  ROUTING,
  storedEntry,
  storedOutcome,
  type HistoryOutcome,
} from './delivery-history.js';
import { recordWords } from './search-terms.js';

const FLUSH_EVERY_MS = 20;
/**
 * A batch's size. An entry is a few commands inside the script, and each word of the batch one
 * APPEND, whatever the number of entries that have it: one call of 50 holds Redis for about a
 * millisecond, and BullMQ's commands go between calls.
 */
const LARGEST_BATCH = 50;
/**
 * Lines held while Redis is slow or away, those waiting and those of the batch being written
 * together; beyond this many, new ones are dropped and counted.
 */
export const MOST_HELD = 20_000;

const CAP_WARNING_EVERY_MS = 60 * 60_000;

/** One batch, in order (see the script for what it writes): loaded once, with the module. */
const WRITE_HISTORY = readFileSync(new URL('./write-history.lua', import.meta.url), 'utf8');

/** Each op carries its delivery's receipt time (`t`), by which a batch is ordered. */
type Op =
  | {
      t: number;
      day: number;
      expireAt: number;
      key: string;
      entry: string;
      /** The outcome line of a routing that succeeded, for an entry whose routing had failed. */
      routed: string;
      /** The record's id, when the delivery's key is not made of it. */
      r?: string;
      f?: string;
      /** The record's words, separated by spaces (none has one): cheaper to encode than a list. */
      words: string;
    }
  | {
      t: number;
      day: number;
      expireAt: number;
      key: string;
      line: string;
      failed: boolean;
      /** A handler's name: the line is written only if that handler's newest line is no completion. */
      once?: string;
    };

const receivedOf = (op: Op) => op.t;

export interface HistoryWriter {
  /** A worker routed the delivery to these handlers. */
  routed(delivery: Delivery, deliveryJobId: string, handlers: readonly string[]): void;
  /** A run finished: completed, or failed for good. */
  finished(delivery: Delivery, handler: string, outcome: HistoryOutcome): void;
  /**
   * A run found done already (it had completed before, runs.ts): completed, now, unless the
   * history's newest line for the handler says completed already, whose time and result it keeps.
   */
  completedBefore(delivery: Delivery, handler: string): void;
  /** Lines held in memory: waiting, and in the batch being written. At most `mostHeld`. */
  readonly held: number;
  /** Writes what is waiting, then stops. */
  close(): Promise<void>;
}

type WithHistoryScript = RedisConnection & {
  /** Resolves to how many entries it dropped past the cap. */
  writeHistory(
    seqKey: string,
    base: string,
    ops: string,
    mostKept: number,
    days: string,
  ): Promise<number>;
};

export function createHistoryWriter(options: {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly logger: Logger;
  /** Lines held at most, waiting or being written. Default: MOST_HELD. */
  readonly mostHeld?: number;
  /** Entries kept at most; the oldest are dropped past it. Default: MOST_KEPT. */
  readonly mostKept?: number;
  /** Told how many entries each batch dropped past `mostKept`, when it dropped any. */
  readonly dropped?: (entries: number) => void;
}): HistoryWriter {
  const { prefix, ttlSeconds, logger, mostHeld = MOST_HELD, mostKept = MOST_KEPT } = options;
  const keys = historyKeys(prefix);
  const connection = options.connection as WithHistoryScript;
  connection.defineCommand('writeHistory', { numberOfKeys: 1, lua: WRITE_HISTORY });
  /** Lines not yet taken into a round. */
  let waiting: Op[] = [];
  /** Lines of the round being written that are not written yet, the batch in flight included. */
  let unwritten = 0;
  let timer: NodeJS.Timeout | undefined;
  /** The one loop that writes, while there is anything to write; undefined when idle. */
  let writing: Promise<void> | undefined;
  let failing = false;
  let dropped = 0;
  let lastCapWarning = -Infinity;

  const warnAtCap = (droppedAtCap: number) => {
    if (droppedAtCap === 0) return;
    options.dropped?.(droppedAtCap);
    if (Date.now() - lastCapWarning < CAP_WARNING_EVERY_MS) return;
    lastCapWarning = Date.now();
    logger.warn(
      { mostKept, dropped: droppedAtCap },
      `history at its cap of ${mostKept} deliveries: dropping the oldest; raise HISTORY_MAX_DELIVERIES or size Redis (warned at most once an hour)`,
    );
  };

  const writeBatch = async (batch: Op[]) => {
    try {
      const days = keptDays(Date.now(), ttlSeconds).join(' ');
      warnAtCap(
        await connection.writeHistory(keys.seq, keys.base, JSON.stringify(batch), mostKept, days),
      );
      if (failing) logger.info('history written again');
      failing = false;
      reportDropped();
    } catch (error) {
      if (!failing) {
        logger.warn(
          { error: (error as Error).message, lines: batch.length },
          'could not write the delivery history; its deliveries and runs are not affected',
        );
      }
      failing = true;
    }
  };

  /**
   * One batch in flight at a time: the next is taken only once the last has settled, so a Redis
   * that does not answer holds one batch and the lines behind it, never a chain of writes.
   */
  const writeAll = async () => {
    try {
      while (waiting.length > 0) {
        // Entries are numbered in the order they are written, and a list shows the highest first:
        // within a round, in the order received (deliveries routed at once finish in any order).
        // The sort is stable, so an entry still goes before the outcomes of its delivery.
        const round = waiting.sort((a, b) => receivedOf(a) - receivedOf(b));
        waiting = [];
        for (let start = 0; start < round.length; start += LARGEST_BATCH) {
          unwritten = round.length - start;
          const batch = round.slice(start, start + LARGEST_BATCH);
          await writeBatch(batch);
          unwritten -= batch.length;
        }
      }
    } finally {
      // In the same step as the last look at `waiting`, so a line added next starts a new loop.
      writing = undefined;
    }
  };

  const flush = (): Promise<void> => {
    timer = undefined;
    // With lines waiting, the loop awaits before it ends, so `writing` is cleared after this.
    if (!writing && waiting.length > 0) writing = writeAll();
    return writing ?? Promise.resolve();
  };

  const add = (op: Op) => {
    if (waiting.length + unwritten >= mostHeld) {
      if (dropped++ === 0) {
        logger.warn(
          { held: waiting.length + unwritten },
          'the delivery history is not keeping up: dropping its lines until it does (deliveries and runs are not affected)',
        );
      }
      return;
    }
    waiting.push(op);
    // While a batch is being written, the loop takes what waits when it is done.
    if (!writing) timer ??= setTimeout(() => void flush(), FLUSH_EVERY_MS);
  };

  /**
   * A dropping episode ends once half the room is free again, so a writer that hovers at the cap
   * says so once, not once a batch.
   */
  const reportDropped = () => {
    if (dropped === 0 || waiting.length + unwritten > mostHeld / 2) return;
    logger.warn({ dropped }, 'the delivery history keeps up again; lines were dropped meanwhile');
    dropped = 0;
  };

  const when = (delivery: Delivery) => {
    const receivedAtMs = Date.parse(delivery.receivedAt);
    const day = dayOf(receivedAtMs);
    return { receivedAtMs, day, expireAt: expiryOfDay(day, ttlSeconds) };
  };

  const outcomeOp = (delivery: Delivery, handler: string, outcome: HistoryOutcome): Op => {
    const { receivedAtMs, day, expireAt } = when(delivery);
    return {
      t: receivedAtMs,
      day,
      expireAt,
      key: delivery.key,
      line: storedOutcome(handler, outcome),
      failed: outcome.state === 'failed',
    };
  };

  return {
    routed(delivery, deliveryJobId, handlers) {
      const { receivedAtMs, day, expireAt } = when(delivery);
      const { record } = delivery;
      add({
        t: receivedAtMs,
        day,
        expireAt,
        key: delivery.key,
        entry: storedEntry({ key: delivery.key, deliveryJobId, record, handlers }, receivedAtMs),
        routed: storedOutcome(ROUTING, { state: 'completed', at: new Date().toISOString() }),
        ...(delivery.key === keyOfRecord(record.id) ? {} : { r: record.id }),
        // A string: Lua would print a large number in exponent form.
        ...(typeof record.feedback_id === 'number' ? { f: String(record.feedback_id) } : {}),
        words: recordWords(record).join(' '),
      });
    },
    finished(delivery, handler, outcome) {
      add(outcomeOp(delivery, handler, outcome));
    },
    completedBefore(delivery, handler) {
      const outcome = { state: 'completed', at: new Date().toISOString() } as const;
      add({ ...outcomeOp(delivery, handler, outcome), once: handler });
    },
    get held() {
      return waiting.length + unwritten;
    },
    async close() {
      if (timer) clearTimeout(timer);
      await flush();
      reportDropped();
    },
  };
}
