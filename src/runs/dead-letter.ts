/**
 * The dead letter: what failed for good and waits for an operator. Mostly handler runs that used
 * up their attempts or failed in a way retrying cannot fix; also `deliveries` jobs whose data is
 * not a delivery (from an older version, or added by hand), which no handler ever saw. Kept with
 * the reason until retried, or until retention drops them (30 days for runs, 7 for deliveries).
 */
import type { Job, Queue } from 'bullmq';
import { ROUTING } from '../history/delivery-history.js';
import { handlerOfRunId, type HandlerRunData, type RunQueues } from './run-queues.js';
import { failureCause } from './failure-cause.js';
import { startAfresh } from './restart.js';

export interface DeadLetterEntry {
  /** The job's id, as `deliveries retry` takes it. */
  readonly id: string;
  /** The handler of the run; `routing` for a `deliveries` job that failed. */
  readonly handler: string;
  /** Empty when the job's data has no readable key. */
  readonly deliveryKey: string;
  /** The last error's message. */
  readonly reason: string;
  readonly attempts: number;
  /** When it failed for the last time, ISO 8601 UTC. */
  readonly failedAt: string | undefined;
}

export interface DeadLetter {
  /** Most recent first. */
  list(options?: { offset?: number; limit?: number }): Promise<DeadLetterEntry[]>;
  count(): Promise<number>;
  /**
   * Queues one failed job again, afresh (restart.ts): a run with all of its attempts, a routing
   * job to route its delivery again. False when there is no such failed job.
   */
  retry(id: string): Promise<boolean>;
  /**
   * Queues again every job that was failed when it was called, each once (one that fails again
   * meanwhile waits for the next call), at most MOST_IN_A_RETRY_ALL: queue by queue (the failed
   * routings, then each handler's runs by name), the oldest of each first. Returns how many it
   * queued again.
   */
  retryAll(): Promise<number>;
  /**
   * Queues again the failed runs of one group (the console's "retry all" of a handler and
   * cause): those of `handler` whose reason has the cause of `reason` (failure-cause.ts), so any
   * one of the group's reasons, or its cause, names the whole group. Among the handler's newest
   * MOST_IN_A_GROUP_RETRY; returns how many.
   */
  retryGroup(group: { handler: string; reason: string }): Promise<number>;
}

/** How many of the newest failed jobs a group retry looks through. */
export const MOST_IN_A_GROUP_RETRY = 5_000;

/** How many failed jobs one retry-all takes, queue by queue: the rest wait for the next. */
export const MOST_IN_A_RETRY_ALL = 100_000;

export interface DeadLetterGroup {
  readonly handler: string;
  /** What its runs' reasons have in common: a reason with its values taken out. */
  readonly cause: string;
  /** The reason of its newest run; each run keeps its own. */
  readonly reason: string;
  readonly runs: readonly DeadLetterEntry[];
}

/**
 * Failed runs by handler and cause, the largest group first (ties: by handler, then cause). The
 * runs of a group keep the order they came in (the newest first, as `list` gives them).
 */
export function groupDeadLetter(entries: readonly DeadLetterEntry[]): DeadLetterGroup[] {
  const groups = new Map<string, DeadLetterGroup & { runs: DeadLetterEntry[] }>();
  for (const entry of entries) {
    const cause = failureCause(entry.reason);
    const id = JSON.stringify([entry.handler, cause]);
    const group = groups.get(id) ?? {
      handler: entry.handler,
      cause,
      reason: entry.reason,
      runs: [],
    };
    group.runs.push(entry);
    groups.set(id, group);
  }
  return [...groups.values()].sort(
    (a, b) =>
      b.runs.length - a.runs.length ||
      a.handler.localeCompare(b.handler) ||
      a.cause.localeCompare(b.cause),
  );
}

export interface DeadLetterOptions {
  /** The handlers' queues, whose failed runs are the dead letter. */
  readonly runQueues: Pick<RunQueues, 'of' | 'all' | 'handlers'>;
  /** The `deliveries` queue, whose failed jobs join the dead letter. */
  readonly deliveries: Queue;
}

export function createDeadLetter({ runQueues, deliveries }: DeadLetterOptions): DeadLetter {
  // Job data is read as unknown below: a failed job's data may be anything.
  const queues = async (): Promise<Queue[]> => [deliveries, ...(await runQueues.all())];
  const retryAfresh = (job: Job<unknown>) => startAfresh(job, 'failed');

  const entry = (job: Job<unknown>, queue: Queue): DeadLetterEntry => ({
    id: job.id ?? '',
    handler: queue === deliveries ? ROUTING : job.name,
    deliveryKey: keyOf(queue === deliveries ? job.data : (job.data as HandlerRunData).delivery),
    reason: job.failedReason,
    attempts: job.attemptsMade,
    failedAt: job.finishedOn === undefined ? undefined : new Date(job.finishedOn).toISOString(),
  });

  /** The routing's queue, or a handler's: undefined for a handler that has none. */
  const queueOf = async (handler: string): Promise<Queue | undefined> => {
    if (handler === ROUTING) return deliveries;
    return (await runQueues.handlers()).includes(handler) ? runQueues.of(handler) : undefined;
  };

  return {
    async list({ offset = 0, limit = 50 } = {}) {
      // Each queue's newest `offset + limit`, merged: enough for any page of them together.
      const pages = await Promise.all(
        (await queues()).map(async (queue) =>
          (await queue.getFailed(0, offset + limit - 1)).map((job) => entry(job, queue)),
        ),
      );
      return pages
        .flat()
        .sort((a, b) => (b.failedAt ?? '').localeCompare(a.failedAt ?? ''))
        .slice(offset, offset + limit);
    },

    async count() {
      const counts = await Promise.all((await queues()).map((queue) => queue.getFailedCount()));
      return counts.reduce((sum, count) => sum + count, 0);
    },

    async retry(id) {
      // A run's id names its handler; any other is a delivery's.
      const queue = await queueOf(handlerOfRunId(id) ?? ROUTING);
      const job = queue && (await queue.getJob(id));
      return job ? retryAfresh(job) : false;
    },

    async retryAll() {
      // The ids first, oldest first (Sidekiq's retry_all): a job retried here that fails again
      // goes back to the failed set, and is not taken a second time by this call.
      const snapshot: [Queue, string][] = [];
      for (const queue of await queues()) {
        const room = MOST_IN_A_RETRY_ALL - snapshot.length;
        if (room === 0) break;
        for (const id of await queue.getRanges(['failed'], 0, room - 1, true)) {
          snapshot.push([queue, id]);
        }
      }
      let retried = 0;
      for (let start = 0; start < snapshot.length; start += RETRY_PAGE) {
        const done = await Promise.all(
          snapshot.slice(start, start + RETRY_PAGE).map(async ([queue, id]) => {
            const job = await queue.getJob(id);
            return job ? retryAfresh(job) : false;
          }),
        );
        retried += done.filter(Boolean).length;
      }
      return retried;
    },

    async retryGroup({ handler, reason }) {
      const cause = failureCause(reason);
      const queue = await queueOf(handler);
      let retried = 0;
      for (const job of (await queue?.getFailed(0, MOST_IN_A_GROUP_RETRY - 1)) ?? []) {
        if (failureCause(job.failedReason) === cause && (await retryAfresh(job))) retried += 1;
      }
      return retried;
    },
  };
}

/** Failed jobs retried at once by retryAll. */
const RETRY_PAGE = 100;

function keyOf(delivery: unknown): string {
  const key = (delivery as { key?: unknown } | null | undefined)?.key;
  return typeof key === 'string' ? key : '';
}
