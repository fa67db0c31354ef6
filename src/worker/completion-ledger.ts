/**
 * Remembers handler runs that succeeded while Redis may not know it, so that they are not run
 * again: through a Redis restart (reliability scenarios 1, 2), and through a failover with
 * ACK_REPLICAS (11, 15). How, in docs/runs.md ("A completed run is not run again"): each success
 * is held until BullMQ confirms its completion; one unconfirmed when Redis is back, after half a
 * lock or at a lost lock gets a marker, and a run started before without an outcome asks first.
 * With ACK_REPLICAS every success gets a marker, held until `WAIT n` (on a connection of the
 * ledger's own: WAIT blocks the one it is sent on) says n replicas have it, and every run asks.
 *
 * A SET Redis answered OK on a connection that has not reconnected since is not sent again; only
 * the WAIT repeats. A reconnection may have reached a new primary, which lacks what the old one
 * had not replicated: the markers not yet confirmed are written again there. What it holds is
 * bounded by count (`mostHeld`) and age (`holdAtMostMs`); what it lets go falls back to
 * at-least-once, with a warning. A run is known by its success key (runSuccessKey), which a
 * delivery sent again after a failover shares and an operator's run again or retry does not.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import type { Logger } from '../logger.js';
import {
  CLOSE_WITHIN_MS,
  closeConnection,
  duplicateConnection,
  pipelineResults,
  settlesWithin,
  type RedisConnection,
} from '../queue/redis.js';
import { createReplicatedWrites, type ReplicaAcks } from '../queue/replicated-writes.js';
import { succeededMarkerKey } from '../runs/run-queues.js';
import { detached } from '../tracing/tracer.js';

export interface CompletionLedger {
  /**
   * The handler of this run returned. Its marker, if one is written, lasts DEDUPE_TTL_SECONDS
   * from `rememberedFrom` (ms): for a run's first life, the delivery's receipt, as its
   * deduplication does (a delivery received again after that is a new one, and runs again). And
   * at least as long as the success may be held: the run's own job, whose completion Redis
   * refused or a failover lost, comes back however old its delivery is (a run that waited in a
   * paused queue past DEDUPE_TTL_SECONDS), and must find it.
   */
  succeeded(successKey: string, jobId: string, rememberedFrom: number): void;
  /** BullMQ recorded the run's job as completed (another job of the same key confirms nothing). */
  confirmed(successKey: string, jobId: string): void;
  /**
   * BullMQ refused to finish a job of this worker's for want of its lock (it expired, or another
   * worker holds it now): its job may be taken up again at once, not a lock's time from now, so
   * the successes not confirmed yet get their markers now. It names no job: all of them do.
   */
  lockLost(): void;
  /**
   * Whether this process holds this run's success, not yet safe in Redis. Asks nothing. Not one of
   * a delivery no longer remembered at `receivedAt` (ms), the run's delivery's receipt.
   */
  holds(successKey: string, receivedAt?: number): boolean;
  /** Whether this run's handler is known to have succeeded already: held, or marked in Redis. */
  has(successKey: string, receivedAt?: number): Promise<boolean>;
  /**
   * With ACK_REPLICAS every success gets a marker, and a run that looks new must ask for it too:
   * a delivery a failover lost before it was acknowledged comes back as a new job, maybe after
   * this process let the success go (its marker replicated), or to another worker.
   */
  readonly marksEverySuccess: boolean;
  /**
   * Stops listening to the connection and writes the markers of every success still held,
   * waiting for Redis up to CLOSE_WITHIN_MS: a shutdown does not hang on a Redis that is away.
   * What cannot be written is logged at error, with the runs' success keys.
   */
  close(): Promise<void>;
}

export interface CompletionLedgerOptions {
  /**
   * The worker's connection, for reading markers. Markers are written on it too, or with
   * ACK_REPLICAS on a duplicate of it; that one's `ready` event says Redis is back.
   */
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** How long a marker is kept: as long as a delivery is remembered. */
  readonly ttlSeconds: number;
  readonly logger: Logger;
  /** ACK_REPLICAS: how many replicas must hold a marker before a success is let go. */
  readonly acks?: ReplicaAcks;
  /**
   * How long a success may wait for BullMQ's confirmation before its marker is written anyway:
   * less than a job's lock lasts. Default: 5 000.
   */
  readonly confirmWithinMs?: number;
  /** Most successes held at once; past it the oldest are let go. Default: MOST_HELD. */
  readonly mostHeld?: number;
  /** Longest a success is held after its handler returned. Default: HOLD_AT_MOST_MS. */
  readonly holdAtMostMs?: number;
  /**
   * The clock successes age by (the age bound, the sweep, a delivery's expiry), in milliseconds
   * since the epoch; tests pass their own, so runs recorded together are one age, and age when told.
   */
  readonly now?: () => number;
}

/** Most successes held at once: some 3 MB; a minute and a half of runs at 100 a second. */
export const MOST_HELD = 10_000;

/**
 * Longest a success is held: longer than the outages and failovers the reliability scenarios
 * play (a 30 s outage; a promotion, then the worker back on the new primary).
 */
export const HOLD_AT_MOST_MS = 5 * 60_000;

/** How long a recorded run waits for others to share its write. */
const BATCH_MS = 20;

/** How soon markers that could not be written (or replicated) are tried again. */
const RETRY_MS = 1_000;

/** How often, at most, the ledger says that it let successes go. */
const LET_GO_WARNING_EVERY_MS = 60_000;

/** Most success keys a log line lists. */
const LISTED_KEYS = 100;

/**
 * Where a held success is: waiting for BullMQ's confirmation, for its marker to be written, or
 * (with ACK_REPLICAS) written on the connection's `generation`, waiting for replicas.
 */
interface Held {
  readonly jobId: string;
  /** Its `rememberedFrom`: its marker holds it too. */
  readonly from: number;
  /** When the handler returned (ms since the epoch). */
  readonly since: number;
  /** When its marker is no longer kept, nor needed (ms since the epoch; see `succeeded`). */
  readonly expiresAt: number;
  stage: 'unconfirmed' | 'unwritten' | 'written';
  generation: number;
}

export function createCompletionLedger({
  connection,
  prefix,
  ttlSeconds,
  logger,
  acks,
  confirmWithinMs = 5_000,
  mostHeld = MOST_HELD,
  holdAtMostMs = HOLD_AT_MOST_MS,
  now: clock = Date.now,
}: CompletionLedgerOptions): CompletionLedger {
  const replicated = acks !== undefined && acks.replicas > 0;
  const markers = replicated ? duplicateConnection(connection) : connection;
  if (replicated) {
    // The worker's connection already reports an outage; this one's errors are the same ones.
    markers.on('error', (error: Error) =>
      logger.debug({ error: error.message }, 'completion ledger connection error'),
    );
  }
  // Only the WAIT goes through it: the markers are written before, on the same connection.
  const replicas = createReplicatedWrites({
    connection: markers,
    key: succeededMarkerKey(prefix, ''),
    ...(acks ? { acks } : {}),
  });
  /** Counts the markers connection's reconnections: a WAIT covers only its own socket's writes. */
  let generation = 0;
  const reconnected = () => void (generation += 1);
  markers.on('close', reconnected);
  // A cluster's node connections come and go on their own.
  const nodeEvents = ['node error', '-node'] as const;
  if (markers instanceof Cluster) for (const event of nodeEvents) markers.on(event, reconnected);

  /** In the order the handlers returned: the first is the oldest. */
  const held = new Map<string, Held>();
  const markerKey = (successKey: string) => succeededMarkerKey(prefix, successKey);
  let closed = false;
  let failing = false;
  let letGo = 0;
  let lastLetGoWarning = -Infinity;

  /** Unconfirmed successes that returned at `before` or earlier are to be written; how many. */
  const toBeWritten = (before = Infinity) => {
    let count = 0;
    for (const success of held.values()) {
      if (success.stage !== 'unconfirmed' || success.since > before) continue;
      success.stage = 'unwritten';
      count += 1;
    }
    return count;
  };

  const needsWrite = (success: Held) =>
    success.stage === 'unwritten' ||
    (success.stage === 'written' && success.generation !== generation);

  /** Lets go of what was held too long, and says how many it let go before it was safe. */
  const prune = (now = clock()) => {
    // In the order the handlers returned: the first one young enough ends the search.
    for (const [key, success] of held) {
      if (success.since + holdAtMostMs > now) break;
      held.delete(key);
      letGo += 1;
    }
    if (letGo > 0 && now - lastLetGoWarning >= LET_GO_WARNING_EVERY_MS) {
      logger.warn(
        { runs: letGo, mostHeld, holdAtMostMs },
        'let go of completed handler runs not yet safe in Redis, past the bound of what is held; they may run again after a failover or a long outage',
      );
      lastLetGoWarning = now;
      letGo = 0;
    }
  };

  /**
   * Writes the markers not written yet on this connection, in one pipeline; with ACK_REPLICAS,
   * waits for replicas once, and forgets the successes they confirmed. Its callers prune first.
   */
  const writeMarkers = async () => {
    const toWrite: [string, Held][] = [];
    // Each held success expires after now: at least as long as it may be held, pruned first.
    for (const [key, success] of held) if (needsWrite(success)) toWrite.push([key, success]);
    const on = generation;
    if (toWrite.length > 0) {
      const pipeline = markers.pipeline();
      for (const [key, { from, expiresAt }] of toWrite) {
        pipeline.set(markerKey(key), from, 'PXAT', expiresAt);
      }
      pipelineResults(await pipeline.exec());
      // Answered on a socket that closed since: a WAIT now covers nothing of it.
      if (generation !== on) return;
      for (const [key, success] of toWrite) {
        if (held.get(key) !== success) continue;
        if (!replicated) {
          held.delete(key);
          continue;
        }
        success.stage = 'written';
        success.generation = on;
      }
    }
    if (!replicated) return;
    const waiting = [...held].filter(
      ([, success]) => success.stage === 'written' && success.generation === on,
    );
    if (waiting.length === 0) return;
    // WAIT covers every earlier write of the connection it is sent on.
    await replicas.store(() => Promise.resolve());
    if (generation !== on) return;
    for (const [key, success] of waiting) if (held.get(key) === success) held.delete(key);
  };

  let batch: Promise<void> | undefined;
  // Outside the trace of the run whose success started the batch: its lines are the ledger's.
  const writeBatch = (delayMs = BATCH_MS) => (batch ??= detached(() => nextBatch(delayMs)));
  const nextBatch = (delayMs: number) =>
    sleep(delayMs, undefined, { ref: false }).then(async () => {
      batch = undefined;
      prune();
      // Not connected, yet or again: the `ready` event writes them once it is.
      if (markers.status !== 'ready') return;
      try {
        await writeMarkers();
        if (failing) logger.info('recorded the completed handler runs held in memory');
        failing = false;
      } catch (error) {
        // Still held, and still what `has` reads: nothing is run again meanwhile.
        if (!failing) {
          logger.warn(
            { runs: held.size, error: (error as Error).message },
            'could not record completed handler runs; holding them and trying again',
          );
        }
        failing = true;
      }
      const pending = [...held.values()].some((success) => success.stage !== 'unconfirmed');
      if (pending && !closed) void writeBatch(RETRY_MS);
    });

  const onReady = () => {
    // Completions BullMQ has not confirmed may never be: Redis may have refused them, or a
    // failover lost them. Their markers say what the completions would have said.
    const unconfirmed = toBeWritten();
    if (unconfirmed > 0) {
      logger.info(
        { runs: unconfirmed },
        'recording handler runs that completed while Redis was away',
      );
    }
    if (held.size > 0) void writeBatch();
  };

  // A completion can be refused while the connection stays up (its worker's own connection cut):
  // a success BullMQ has not confirmed for a while gets its marker, before the job's lock can
  // expire and another worker take it up. One refused for a lost lock is `lockLost`'s, at once.
  const sweep = setInterval(() => {
    const late = toBeWritten(clock() - confirmWithinMs);
    prune();
    if (late > 0) void writeBatch();
  }, confirmWithinMs);
  sweep.unref();
  markers.on('ready', onReady);

  /** A delivery received again after DEDUPE_TTL_SECONDS is new. An earlier marker holds 1. */
  const ofDelivery = (from: number, receivedAt = from) =>
    from <= 1 || !(receivedAt >= from + ttlSeconds * 1000);
  const holds = (successKey: string, receivedAt?: number) => {
    const success = held.get(successKey);
    return success !== undefined && ofDelivery(success.from, receivedAt);
  };

  return {
    succeeded(successKey, jobId, rememberedFrom) {
      held.delete(successKey);
      while (held.size >= mostHeld) {
        held.delete(held.keys().next().value!);
        letGo += 1;
      }
      const since = clock();
      held.set(successKey, {
        jobId,
        from: rememberedFrom,
        since,
        expiresAt: Math.max(rememberedFrom + ttlSeconds * 1000, since + holdAtMostMs),
        stage: 'unconfirmed',
        generation,
      });
      if (letGo > 0) void writeBatch();
    },
    confirmed(successKey, jobId) {
      const success = held.get(successKey);
      if (success?.jobId !== jobId) return;
      // BullMQ's completion is the record on the primary; a marker's WAIT tells when replicas
      // have it (the marker is written after the completion, so they have both).
      if (!replicated) held.delete(successKey);
      else if (success.stage === 'unconfirmed') {
        success.stage = 'unwritten';
        void writeBatch();
      }
    },
    lockLost() {
      if (toBeWritten() > 0) void writeBatch();
    },
    marksEverySuccess: replicated,
    holds,
    has: async (successKey, receivedAt) => {
      if (holds(successKey, receivedAt)) return true;
      const from = await connection.get(markerKey(successKey));
      return from !== null && ofDelivery(Number(from), receivedAt);
    },
    async close() {
      closed = true;
      markers.off('ready', onReady);
      clearInterval(sweep);
      // A completion BullMQ has not confirmed by now (Redis away, or a handler abandoned at
      // shutdown) may never be: its marker says so to the worker that takes the job next.
      toBeWritten();
      prune();
      await settlesWithin(writeMarkers(), CLOSE_WITHIN_MS);
      if (held.size > 0) {
        const keys = [...held.keys()];
        logger.error(
          { runs: keys.slice(0, LISTED_KEYS), more: Math.max(0, keys.length - LISTED_KEYS) },
          'could not record completed handler runs before exit: Redis (or its replicas) did not confirm them; they may run again',
        );
      }
      markers.off('close', reconnected);
      if (markers instanceof Cluster)
        for (const event of nodeEvents) markers.off(event, reconnected);
      if (replicated) await closeConnection(markers);
    },
  };
}
