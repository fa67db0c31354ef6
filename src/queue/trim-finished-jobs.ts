/**
 * Keeps queues within their retention's age when no job of theirs finishes: BullMQ applies a
 * job's `removeOnComplete`/`removeOnFail` only when a job of the same queue finishes (its
 * KeepJobs docs say so; docs/runs.md, "How long finished runs are kept"). Only finished jobs go,
 * through `Queue.clean`: a waiting run of a removed handler waits for a worker that has it.
 */
import type { Queue } from 'bullmq';
import { keptBy, type JobRetention } from './deliveries-queue.js';
import type { Logger } from '../logger.js';

/** Most jobs one pass removes from one queue, in each of its finished states. */
export const MOST_TRIMMED_PER_PASS = 1_000;

export interface TrimOptions {
  /** The jobs' retention, as they are added (handlerRunRetention, the receiver's deliveries'). */
  readonly retention: JobRetention;
  /**
   * DEDUPE_TTL_SECONDS: `clean` removes a job's deduplication marker with it (retention does
   * not), so a job is removed no sooner than its marker expires by itself: a delivery sent again,
   * or a routing job that runs again, within that time is still taken once.
   */
  readonly dedupeTtlSeconds: number;
  readonly logger: Logger;
}

/**
 * Removes the finished jobs of these queues that are older than their retention keeps (or than
 * DEDUPE_TTL_SECONDS, when longer), at most MOST_TRIMMED_PER_PASS per queue and state; says what it
 * removed. Resolves to how many it removed.
 */
export async function trimFinishedJobs(
  queues: readonly Queue[],
  { retention, dedupeTtlSeconds, logger }: TrimOptions,
): Promise<number> {
  const states = [
    ['completed', retention.removeOnComplete],
    ['failed', retention.removeOnFail],
  ] as const;
  let removed = 0;
  for (const queue of queues) {
    for (const [state, keep] of states) {
      const { ageSeconds } = keptBy(keep);
      if (ageSeconds === undefined) continue;
      const graceMs = Math.max(ageSeconds, dedupeTtlSeconds) * 1000;
      // `clean` adds a `cleaned` event to the queue's stream at each call, with jobs to remove
      // or none, and only adding a job trims that stream: a retired handler's would grow at
      // every pass. So it is called only when the oldest finished job is past its time.
      const [oldest] = await queue.getJobs([state], 0, 0, true);
      if (!oldest?.finishedOn || oldest.finishedOn > Date.now() - graceMs) continue;
      const ids = await queue.clean(graceMs, MOST_TRIMMED_PER_PASS, state);
      if (ids.length === 0) continue;
      removed += ids.length;
      logger.info(
        { queue: queue.name, state, removed: ids.length, olderThanSeconds: graceMs / 1000 },
        'removed finished jobs older than their retention keeps them',
      );
    }
  }
  return removed;
}
