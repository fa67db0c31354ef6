/**
 * `feedback-receiver runs upgrade` (docs/upgrading.md): the runs that still wait in the one
 * `handler-runs` queue of earlier versions move to their handlers' queues.
 *
 * A run moves by being added to its handler's queue under its own id, then removed from the old
 * queue: a move cut short leaves it in both, and the next call only removes the old one (an add
 * of an id that exists adds nothing). Its attempts start afresh in the new queue, and the log of
 * its earlier attempts stays behind. Failed runs stay where they are unless the operator asks:
 * moving one queues it again, which is a retry.
 */
import { Queue, type Job, type JobType } from 'bullmq';
import type { RedisConnection } from '../queue/redis.js';
import type { JobRetention } from '../queue/deliveries-queue.js';
import { HANDLER_NAME, runJobOptions, type HandlerRunData, type RunQueues } from './run-queues.js';

/** The one queue of runs of the versions before a queue per handler. */
export const LEGACY_RUNS_QUEUE = 'handler-runs';

export interface LegacyRunsMove {
  /** Runs now in their handlers' queues. */
  readonly moved: number;
  /** Failed runs left in the old queue (moved only when asked). */
  readonly failedLeft: number;
  /** Runs a worker of the earlier version still holds: move them once it has stopped. */
  readonly activeLeft: number;
}

export interface MoveLegacyRunsOptions {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly runQueues: Pick<RunQueues, 'of'>;
  /** DEDUPE_TTL_SECONDS: how long a run's id keeps it from being added twice. */
  readonly dedupeTtlSeconds: number;
  /** How long a moved run is kept once finished (handlerRunRetention), as a worker adds it. */
  readonly retention: JobRetention;
  /** Move the failed runs too: each is queued again, with fresh attempts. */
  readonly includeFailed?: boolean;
}

/** Runs read from the old queue at a time. */
const PAGE = 100;

export async function moveLegacyRuns(options: MoveLegacyRunsOptions): Promise<LegacyRunsMove> {
  const { connection, prefix, runQueues, dedupeTtlSeconds, retention } = options;
  const legacy = new Queue<HandlerRunData>(LEGACY_RUNS_QUEUE, { connection, prefix });
  legacy.on('error', () => {}); // the connection's owner reports an outage
  const states: JobType[] = ['waiting', 'delayed', 'prioritized'];
  if (options.includeFailed) states.push('failed');
  try {
    let moved = 0;
    /** Runs that cannot move (no handler name a queue can have): counted once, left alone. */
    const unmovable = new Set<string>();
    for (;;) {
      const page = await legacy.getJobs(states, 0, PAGE - 1 + unmovable.size, true);
      const movable = page.filter((job) => job.id !== undefined && !unmovable.has(job.id));
      if (movable.length === 0) break;
      for (const job of movable) {
        if (!HANDLER_NAME.test(job.name)) {
          unmovable.add(job.id!);
          continue;
        }
        await moveOne(job);
        moved += 1;
      }
    }
    const counts = await legacy.getJobCounts('failed', 'active');
    return { moved, failedLeft: counts.failed ?? 0, activeLeft: counts.active ?? 0 };
  } finally {
    await legacy.close();
  }

  async function moveOne(job: Job<HandlerRunData>): Promise<void> {
    const dueIn = job.delay > 0 ? dueAt(job) - Date.now() : 0;
    await runQueues.of(job.name).add(job.name, job.data, {
      ...runJobOptions(job.id!, job.opts.attempts ?? 1, { dedupeTtlSeconds, retention }),
      ...(dueIn > 0 ? { delay: dueIn } : {}),
    });
    try {
      await job.remove();
    } catch (error) {
      throw new Error(
        `run ${job.id!} was taken by a worker of the earlier version while it moved: stop every such worker, then run this again`,
        { cause: error },
      );
    }
  }
}

/**
 * When a delayed run becomes due. A run never tried waits out the delay it was added with, from
 * its creation (`timestamp`). A run backing off after a failed attempt has `delay` set to its
 * backoff, which began when that attempt failed: BullMQ keeps that moment only in the delayed
 * set's score (an encoding of its own), so this counts from the attempt's start (`processedOn`)
 * instead: due at most one attempt's length early, never an hour early as from its creation.
 */
function dueAt(job: Pick<Job, 'timestamp' | 'processedOn' | 'delay'>): number {
  return Math.max(job.timestamp, job.processedOn ?? 0) + job.delay;
}
