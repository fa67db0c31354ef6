/**
 * Remembers handler runs that succeeded, so that they are not run again.
 *
 * A run made while routing (the first attempt) has no job of its own: its success is written as a
 * marker with the deduplication TTL, checked before any such run.
 *
 * A queued run's success is recorded by BullMQ's completion of its job, with one command after
 * the handler returns. When Redis is away at that moment, the command waits for it; if Redis is
 * away longer than the job's lock (a restart restores the lock's absolute expiry), the completion
 * is refused, the job counts as stalled, and it would run a second time. So each such success is
 * held in memory until BullMQ confirms the completion; whatever is still held when Redis comes
 * back is written as a marker, and a run that was started before without an outcome checks the
 * marker (and the memory) first. Normal queued runs pay nothing: no command, no round trip.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

export interface CompletionLedger {
  /** The handler of this run returned. */
  succeeded(jobId: string): void;
  /** The handler of this run, which has no job, returned: its marker is written now. */
  record(jobId: string): Promise<void>;
  /** BullMQ recorded the run as completed. */
  confirmed(jobId: string): void;
  /** Whether this run's handler is known to have succeeded already, or any of `orKeys` exists. */
  has(jobId: string, orKeys?: readonly string[]): Promise<boolean>;
  /** Stops listening to the connection. */
  close(): void;
}

export interface CompletionLedgerOptions {
  /** The worker's connection: its `ready` event says Redis is back. */
  readonly connection: Redis;
  readonly prefix: string;
  /** How long a marker is kept: as long as a delivery is remembered. */
  readonly ttlSeconds: number;
  readonly logger: Logger;
}

export function createCompletionLedger({
  connection,
  prefix,
  ttlSeconds,
  logger,
}: CompletionLedgerOptions): CompletionLedger {
  const unconfirmed = new Set<string>();
  const markerKey = (jobId: string) => `${prefix}:handler-runs:succeeded:${jobId}`;

  const writeMarkers = async () => {
    const jobIds = [...unconfirmed];
    if (jobIds.length === 0) return;
    try {
      const pipeline = connection.pipeline();
      for (const jobId of jobIds) pipeline.set(markerKey(jobId), '1', 'EX', ttlSeconds);
      const failed = (await pipeline.exec())?.find(([error]) => error);
      if (failed) throw failed[0];
      // Redis holds them now; memory keeps only what it does not.
      for (const jobId of jobIds) unconfirmed.delete(jobId);
      logger.info(
        { runs: jobIds.length },
        'recorded handler runs that completed while Redis was away',
      );
    } catch (error) {
      // Still held in memory; the next reconnection tries again.
      logger.warn({ error: (error as Error).message }, 'could not record completed handler runs');
    }
  };
  const onReady = () => void writeMarkers();
  connection.on('ready', onReady);

  return {
    succeeded: (jobId) => void unconfirmed.add(jobId),
    confirmed: (jobId) => void unconfirmed.delete(jobId),
    async record(jobId) {
      // Held in memory too, until Redis has it: should Redis be away, the routing job that made
      // this run is re-run later, and must find it.
      unconfirmed.add(jobId);
      await connection.set(markerKey(jobId), '1', 'EX', ttlSeconds);
      unconfirmed.delete(jobId);
    },
    has: async (jobId, orKeys = []) =>
      unconfirmed.has(jobId) || (await connection.exists(markerKey(jobId), ...orKeys)) > 0,
    close: () => void connection.off('ready', onReady),
  };
}
