/**
 * Remembers handler runs that succeeded while Redis may not know it, so that they are not run
 * again.
 *
 * A run's success is recorded by BullMQ's completion of its job, with one command after the
 * handler returns. When Redis is away at that moment, the command waits for it; if Redis is away
 * longer than the job's lock (a restart restores the lock's absolute expiry), the completion is
 * refused, the job counts as stalled, and it would run a second time. So each success is held in
 * memory until BullMQ confirms the completion; whatever is still held when Redis comes back, or
 * has waited for its confirmation half a lock (a completion refused while the connection stayed
 * up), is written as a marker that lasts as long as the delivery is remembered, and a run that was started before without an
 * outcome checks the marker (and the memory) first. Normal runs pay nothing: no command, no
 * round trip.
 *
 * Redis replicates asynchronously, so a failover can promote a replica that never got a run's
 * completion: there, its job waits as if it had never started; a delivery it lost before the
 * receiver acknowledged it comes back from its sender as a new job, whose run looks new too.
 * With ACK_REPLICAS=n a success is held until n replicas have its marker (once BullMQ confirms
 * the completion), checked with `WAIT` on a connection of the ledger's own, since WAIT blocks
 * the connection it is sent on.
 * Every run this process takes is checked against what it holds, even one whose job looks new.
 * Another worker that takes such a job before this one has written its markers to the new
 * primary does not know it ran.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import { closeConnection, duplicateConnection, type RedisConnection } from '../queue/redis.js';
import { createReplicatedWrites, type ReplicaAcks } from '../queue/replicated-writes.js';
import { succeededMarkerKey } from '../runs/run-queues.js';
import { detached } from '../tracing/tracer.js';

/**
 * Runs are known by their success key (runSuccessKey: the handler and the delivery's key), so a
 * delivery sent again as a new job after a failover lost it is recognised; a confirmation is
 * matched to its job id too, so that another job of the same key confirms nothing it did not do.
 */
export interface CompletionLedger {
  /**
   * The handler of this run returned. Its marker, if one is written, lasts as long as the
   * delivery is remembered: DEDUPE_TTL_SECONDS from `receivedAt` (ms), as its deduplication does.
   */
  succeeded(successKey: string, jobId: string, receivedAt: number): void;
  /** BullMQ recorded the run's job as completed. */
  confirmed(successKey: string, jobId: string): void;
  /** Whether this process holds this run's success, not yet safe in Redis. Asks nothing. */
  holds(successKey: string): boolean;
  /** Whether this run's handler is known to have succeeded already: held, or marked in Redis. */
  has(successKey: string): Promise<boolean>;
  /**
   * With ACK_REPLICAS every success gets a marker, and a run that looks new must ask for it too:
   * a delivery a failover lost before it was acknowledged comes back as a new job, maybe after
   * this process let the success go (its marker replicated), or to another worker.
   */
  readonly marksEverySuccess: boolean;
  /**
   * Stops listening to the connection and writes the markers of every success still held,
   * waiting for Redis up to `CLOSE_WAIT_MS`: a shutdown does not hang on a Redis that is away.
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
  /** How long a recorded run waits for others to share its write. Default: 20. */
  readonly batchMs?: number;
  /** ACK_REPLICAS: how many replicas must hold a marker before a success is let go. */
  readonly acks?: ReplicaAcks;
  /**
   * How long a success may wait for BullMQ's confirmation before its marker is written anyway:
   * less than a job's lock lasts. Default: 5 000.
   */
  readonly confirmWithinMs?: number;
}

/** How long closing waits for the last markers to be written. */
export const CLOSE_WAIT_MS = 2_000;

/** How soon markers that could not be written (or replicated) are tried again. */
const RETRY_MS = 1_000;

export function createCompletionLedger({
  connection,
  prefix,
  ttlSeconds,
  logger,
  batchMs = 20,
  acks,
  confirmWithinMs = 5_000,
}: CompletionLedgerOptions): CompletionLedger {
  const replicated = acks !== undefined && acks.replicas > 0;
  const markers = replicated ? duplicateConnection(connection) : connection;
  if (replicated) {
    // The worker's connection already reports an outage; this one's errors are the same ones.
    markers.on('error', (error: Error) =>
      logger.debug({ error: error.message }, 'completion ledger connection error'),
    );
  }
  const writes = createReplicatedWrites({
    connection: markers,
    key: succeededMarkerKey(prefix, ''),
    ...(acks ? { acks } : {}),
  });
  /** Successes whose completion BullMQ has not confirmed: their job, since when, and expiry. */
  const unconfirmed = new Map<
    string,
    { readonly jobId: string; readonly since: number; readonly expiresAt: number }
  >();
  /**
   * Successes whose marker Redis (and with ACK_REPLICAS, its replicas) may not hold yet, with
   * when the marker expires (ms since the epoch).
   */
  const unrecorded = new Map<string, number>();
  const markerKey = (successKey: string) => succeededMarkerKey(prefix, successKey);
  let closed = false;
  let failing = false;

  /** Writes the markers held so far in one pipeline; once they are safe, forgets them. */
  const writeMarkers = async () => {
    // A delivery no longer remembered needs no marker: it would be a new delivery now.
    const now = Date.now();
    for (const [key, expiresAt] of unrecorded) if (expiresAt <= now) unrecorded.delete(key);
    const held = [...unrecorded];
    if (held.length === 0) return;
    await writes.store(async () => {
      const pipeline = markers.pipeline();
      for (const [key, expiresAt] of held) pipeline.set(markerKey(key), '1', 'PXAT', expiresAt);
      const failed = (await pipeline.exec())?.find(([error]) => error);
      if (failed) throw failed[0];
    });
    for (const [key, expiresAt] of held) {
      if (unrecorded.get(key) === expiresAt) unrecorded.delete(key);
    }
  };

  let batch: Promise<void> | undefined;
  // Outside the trace of the run whose success started the batch: its lines are the ledger's.
  const writeBatch = (delayMs = batchMs) => (batch ??= detached(() => nextBatch(delayMs)));
  const nextBatch = (delayMs: number) =>
    sleep(delayMs, undefined, { ref: false }).then(async () => {
      batch = undefined;
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
            { runs: unrecorded.size, error: (error as Error).message },
            'could not record completed handler runs; holding them and trying again',
          );
        }
        failing = true;
        if (!closed) void writeBatch(RETRY_MS);
      }
    });

  const hold = (successKey: string, expiresAt: number) => {
    unrecorded.set(successKey, expiresAt);
    void writeBatch();
  };

  const onReady = () => {
    // Completions BullMQ has not confirmed may never be: Redis may have refused them, or a
    // failover lost them. Their markers say what the completions would have said.
    if (unconfirmed.size > 0) {
      logger.info(
        { runs: unconfirmed.size },
        'recording handler runs that completed while Redis was away',
      );
    }
    for (const [key, { expiresAt }] of unconfirmed) unrecorded.set(key, expiresAt);
    unconfirmed.clear();
    if (unrecorded.size > 0) void writeBatch();
  };

  // A completion can be refused while the connection stays up (the job's lock was lost, or its
  // worker's own connection cut): a success BullMQ has not confirmed for a while gets its marker,
  // before the job's lock can expire and another worker take it up.
  const sweep = setInterval(() => {
    const before = Date.now() - confirmWithinMs;
    let late = 0;
    for (const [key, { since, expiresAt }] of unconfirmed) {
      if (since > before) continue;
      unconfirmed.delete(key);
      unrecorded.set(key, expiresAt);
      late += 1;
    }
    if (late > 0) void writeBatch();
  }, confirmWithinMs);
  sweep.unref();
  markers.on('ready', onReady);

  const holds = (successKey: string) => unconfirmed.has(successKey) || unrecorded.has(successKey);

  return {
    succeeded(successKey, jobId, receivedAt) {
      const expiresAt = receivedAt + ttlSeconds * 1000;
      unconfirmed.set(successKey, { jobId, since: Date.now(), expiresAt });
    },
    confirmed(successKey, jobId) {
      const success = unconfirmed.get(successKey);
      if (success?.jobId !== jobId) return;
      unconfirmed.delete(successKey);
      // BullMQ's completion is on the primary; a marker's WAIT tells when replicas have it.
      if (replicated) hold(successKey, success.expiresAt);
    },
    marksEverySuccess: replicated,
    holds,
    has: async (successKey) =>
      holds(successKey) || (await connection.exists(markerKey(successKey))) > 0,
    async close() {
      closed = true;
      markers.off('ready', onReady);
      // A completion BullMQ has not confirmed by now (Redis away, or a handler abandoned at
      // shutdown) may never be: its marker says so to the worker that takes the job next.
      clearInterval(sweep);
      for (const [key, { expiresAt }] of unconfirmed) unrecorded.set(key, expiresAt);
      unconfirmed.clear();
      if (unrecorded.size > 0) {
        const written = await Promise.race([
          writeMarkers().then(
            () => true,
            () => false,
          ),
          sleep(CLOSE_WAIT_MS, false, { ref: false }),
        ]);
        if (!written) {
          logger.error(
            { runs: [...unrecorded.keys()] },
            'could not record completed handler runs before exit: Redis is away; they may run again',
          );
        }
      }
      if (replicated) await closeConnection(markers);
    },
  };
}
