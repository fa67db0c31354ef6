/**
 * Keeps handlers' queues within their retention's age when no run of theirs finishes. BullMQ
 * applies a job's `removeOnComplete`/`removeOnFail` only when a job of the same queue finishes, so
 * the queue of a handler that no worker has any more (taken out of a release), or that gets no
 * runs for a while, keeps its finished runs past their age (BullMQ's KeepJobs docs say so). Their
 * count needs nothing more: it grows only as runs finish, which is when BullMQ caps it.
 *
 * Only finished runs go, through BullMQ's `Queue.clean`: a waiting or delayed run of a removed
 * handler is an acknowledged delivery's work, and waits for a worker that has it.
 */
import type { Queue } from 'bullmq';
import { keptBy, type JobRetention } from '../queue/deliveries-queue.js';
import type { Logger } from '../logger.js';

/** Most runs one pass removes from one queue, in each of its finished states. */
export const MOST_TRIMMED_PER_PASS = 1_000;

export interface TrimOptions {
  /** The runs' retention, as their worker adds them (handlerRunRetention). */
  readonly retention: JobRetention;
  /**
   * DEDUPE_TTL_SECONDS: `clean` removes a run's deduplication marker with its job (retention
   * does not), so a run is removed no sooner than its marker expires by itself: a routing job
   * that runs again within that time still adds no run twice.
   */
  readonly dedupeTtlSeconds: number;
  readonly logger: Logger;
  /** Default: MOST_TRIMMED_PER_PASS. */
  readonly mostPerPass?: number;
}

/**
 * Removes the finished runs of these queues that are older than their retention keeps (or than
 * DEDUPE_TTL_SECONDS, when longer), at most `mostPerPass` per queue and state; says what it
 * removed. Resolves to how many it removed.
 */
export async function trimRunQueues(
  queues: readonly Queue[],
  { retention, dedupeTtlSeconds, logger, mostPerPass = MOST_TRIMMED_PER_PASS }: TrimOptions,
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
      // `clean` adds a `cleaned` event to the queue's stream at each call, with runs to remove
      // or none, and only adding a job trims that stream: a retired handler's would grow at
      // every pass. So it is called only when the oldest finished run is past its time.
      const [oldest] = await queue.getJobs([state], 0, 0, true);
      if (!oldest?.finishedOn || oldest.finishedOn > Date.now() - graceMs) continue;
      const ids = await queue.clean(graceMs, mostPerPass, state);
      if (ids.length === 0) continue;
      removed += ids.length;
      logger.info(
        { queue: queue.name, state, removed: ids.length, olderThanSeconds: graceMs / 1000 },
        'removed finished runs older than their retention keeps them',
      );
    }
  }
  return removed;
}
