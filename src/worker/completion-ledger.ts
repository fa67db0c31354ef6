/**
 * Remembers handler runs that succeeded, so that they are not run again.
 *
 * A run made while routing (the first attempt) has no job of its own: its success is written as a
 * marker with the deduplication TTL, checked by a routing job that starts again (after a crash, a
 * completion Redis never got, or a retry). The markers of all runs that succeed within a short
 * window go out together, in one write, after the runs' jobs have moved on, so a run adds no
 * round trip to its job's path. Until its marker is in Redis, a success is held in memory, which
 * the same check reads.
 *
 * A queued run's success is recorded by BullMQ's completion of its job, with one command after
 * the handler returns. When Redis is away at that moment, the command waits for it; if Redis is
 * away longer than the job's lock (a restart restores the lock's absolute expiry), the completion
 * is refused, the job counts as stalled, and it would run a second time. So each such success is
 * held in memory until BullMQ confirms the completion; whatever is still held when Redis comes
 * back is written as a marker, and a run that was started before without an outcome checks the
 * marker (and the memory) first. Normal queued runs pay nothing: no command, no round trip.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import type { RedisConnection } from '../queue/redis.js';

export interface CompletionLedger {
  /** The handler of this run, which has a job of its own, returned. */
  succeeded(jobId: string): void;
  /** The handler of this run, which has no job, returned: its marker is written soon. */
  record(jobId: string): void;
  /** BullMQ recorded the run as completed. */
  confirmed(jobId: string): void;
  /** Whether this run's handler is known to have succeeded already. */
  has(jobId: string): Promise<boolean>;
  /**
   * Stops listening to the connection and writes the markers still held, waiting for Redis up
   * to `CLOSE_WAIT_MS`: a shutdown does not hang on a Redis that is away.
   */
  close(): Promise<void>;
}

export interface CompletionLedgerOptions {
  /** The worker's connection: its `ready` event says Redis is back. */
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** How long a marker is kept: as long as a delivery is remembered. */
  readonly ttlSeconds: number;
  readonly logger: Logger;
  /** How long a recorded run waits for others to share its write. Default: 20. */
  readonly batchMs?: number;
}

/** The key of the marker that says a run's handler succeeded. */
export function succeededMarkerKey(prefix: string, jobId: string): string {
  return `${prefix}:handler-runs:succeeded:${jobId}`;
}

/** How long closing waits for the last markers to be written. */
export const CLOSE_WAIT_MS = 2_000;

export function createCompletionLedger({
  connection,
  prefix,
  ttlSeconds,
  logger,
  batchMs = 20,
}: CompletionLedgerOptions): CompletionLedger {
  /** Runs with a job, whose completion BullMQ has not confirmed. */
  const unconfirmed = new Set<string>();
  /** Runs without a job, whose marker Redis does not hold yet. */
  const unwritten = new Set<string>();
  const markerKey = (jobId: string) => succeededMarkerKey(prefix, jobId);

  /** Writes markers in one pipeline; on success forgets them from `held`. */
  const writeMarkers = async (held: Set<string>) => {
    const jobIds = [...held];
    if (jobIds.length === 0) return;
    const pipeline = connection.pipeline();
    for (const jobId of jobIds) pipeline.set(markerKey(jobId), '1', 'EX', ttlSeconds);
    const failed = (await pipeline.exec())?.find(([error]) => error);
    if (failed) throw failed[0];
    // Redis holds them now; memory keeps only what it does not.
    for (const jobId of jobIds) held.delete(jobId);
  };

  let batch: Promise<void> | undefined;
  const writeBatch = () => {
    batch ??= sleep(batchMs).then(async () => {
      batch = undefined;
      // The worker's connection waits for Redis rather than failing; an error here is Redis
      // refusing the write, and the markers stay held for the next batch or reconnection.
      await writeMarkers(unwritten).catch((error: Error) =>
        logger.warn({ error: error.message }, 'could not record completed handler runs'),
      );
    });
    return batch;
  };

  const onReady = () => {
    const backlog = unconfirmed.size;
    if (unwritten.size > 0) void writeBatch();
    writeMarkers(unconfirmed).then(
      () => {
        if (backlog > 0) {
          logger.info(
            { runs: backlog },
            'recorded handler runs that completed while Redis was away',
          );
        }
      },
      // Still held in memory; the next reconnection tries again.
      (error: Error) =>
        logger.warn({ error: error.message }, 'could not record completed handler runs'),
    );
  };
  connection.on('ready', onReady);

  return {
    succeeded: (jobId) => void unconfirmed.add(jobId),
    confirmed: (jobId) => void unconfirmed.delete(jobId),
    record(jobId) {
      unwritten.add(jobId);
      void writeBatch();
    },
    has: async (jobId) =>
      unconfirmed.has(jobId) ||
      unwritten.has(jobId) ||
      (await connection.exists(markerKey(jobId))) > 0,
    async close() {
      connection.off('ready', onReady);
      if (unwritten.size === 0) return;
      // The bound's timer does not keep the process alive once the batch is written.
      await Promise.race([writeBatch(), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    },
  };
}
