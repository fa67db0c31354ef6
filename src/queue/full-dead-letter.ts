/**
 * Says when a dead letter drops. BullMQ keeps at most the failing job's `removeOnFail.count`
 * failed jobs of its queue and removes the oldest past it, without an event. So when a job fails
 * for good, one count of its queue's failed jobs (a ZCARD) tells whether the queue is at that cap,
 * where each new failure drops the oldest: then a warning, at most once per WARN_EVERY_MS per queue.
 */
import type { Job, Queue } from 'bullmq';
import type { Logger } from '../logger.js';
import { keptBy } from './deliveries-queue.js';

/** A full dead letter is said at most this often per queue. */
export const WARN_EVERY_MS = 60_000;

export interface FullDeadLetterOptions {
  readonly logger: Logger;
  /** Default: WARN_EVERY_MS. */
  readonly warnEveryMs?: number;
  /** The clock, in milliseconds; tests pass their own. Default: `Date.now`. */
  readonly now?: () => number;
}

/** Call with a job that failed for good and its queue; never throws. */
export type FailedForGood = (
  queue: Pick<Queue, 'name' | 'getFailedCount'>,
  job: Pick<Job, 'opts'>,
) => Promise<void>;

export function watchForFullDeadLetters({
  logger,
  warnEveryMs = WARN_EVERY_MS,
  now = Date.now,
}: FullDeadLetterOptions): FailedForGood {
  const warnedAt = new Map<string, number>();
  // One count per queue at a time: jobs failing together need not each count.
  const counting = new Set<string>();
  return async (queue, job) => {
    const cap = keptBy(job.opts.removeOnFail).count;
    const warned = warnedAt.get(queue.name);
    if (cap === undefined || (warned !== undefined && now() - warned < warnEveryMs)) return;
    if (counting.has(queue.name)) return;
    counting.add(queue.name);
    let failed: number;
    try {
      failed = await queue.getFailedCount();
    } catch (error) {
      logger.debug({ error: (error as Error).message }, 'could not count the failed jobs');
      return;
    } finally {
      counting.delete(queue.name);
    }
    if (failed < cap) return;
    warnedAt.set(queue.name, now());
    logger.warn(
      { queue: queue.name, failed, cap },
      `the dead letter of queue ${queue.name} is full: it keeps ${cap} failed jobs, and BullMQ drops the oldest as each new one fails; retry or remove them (deliveries retry, the console)`,
    );
  };
}
