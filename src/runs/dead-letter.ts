/**
 * The dead letter: what failed for good and waits for an operator. Mostly handler runs that used
 * up their attempts or failed in a way retrying cannot fix; also `deliveries` jobs whose data is
 * not a delivery (from an older version, or added by hand), which no handler ever saw. Kept with
 * the reason until retried, or until retention drops them (30 days for runs, 7 for deliveries).
 */
import type { Job, Queue } from 'bullmq';
import type { HandlerRunData } from './handler-runs-queue.js';
import { startAfresh, type SuccessMarkers } from './restart.js';

export interface DeadLetterEntry {
  /** The job's id, as `deliveries retry` takes it. */
  readonly id: string;
  /** The handler of the run; `(routing)` for a `deliveries` job that failed. */
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
  /** Queues every failed job again; returns how many there were. */
  retryAll(): Promise<number>;
  /**
   * Queues again the failed runs of one group (the console's "retry all" of a handler and
   * reason), among the newest MOST_IN_A_GROUP_RETRY; returns how many.
   */
  retryGroup(group: { handler: string; reason: string }): Promise<number>;
}

/** How many of the newest failed jobs a group retry looks through. */
export const MOST_IN_A_GROUP_RETRY = 5_000;

export interface DeadLetterGroup {
  readonly handler: string;
  readonly reason: string;
  readonly runs: readonly DeadLetterEntry[];
}

/** Failed runs by handler and reason, the largest group first. */
export function groupDeadLetter(entries: readonly DeadLetterEntry[]): DeadLetterGroup[] {
  const groups = new Map<string, { handler: string; reason: string; runs: DeadLetterEntry[] }>();
  for (const entry of entries) {
    const id = JSON.stringify([entry.handler, entry.reason]);
    const group = groups.get(id) ?? { handler: entry.handler, reason: entry.reason, runs: [] };
    group.runs.push(entry);
    groups.set(id, group);
  }
  return [...groups.values()].sort((a, b) => b.runs.length - a.runs.length);
}

export const ROUTING = '(routing)';

export interface DeadLetterOptions {
  readonly handlerRuns: Queue<HandlerRunData>;
  /** The `deliveries` queue, whose failed jobs join the dead letter. */
  readonly deliveries: Queue;
  /** Where a run's success marker is, removed when it starts afresh. */
  readonly markers: SuccessMarkers;
}

export function createDeadLetter({
  handlerRuns,
  deliveries,
  markers,
}: DeadLetterOptions): DeadLetter {
  // Job data is read as unknown below: a failed job's data may be anything.
  const queues: Queue[] = [handlerRuns, deliveries];
  const retryAfresh = (job: Job<unknown>) => startAfresh(job, 'failed', markers);

  const entry = (job: Job<unknown>, queue: Queue): DeadLetterEntry => ({
    id: job.id ?? '',
    handler: queue === deliveries ? ROUTING : job.name,
    deliveryKey: keyOf(queue === deliveries ? job.data : (job.data as HandlerRunData).delivery),
    reason: job.failedReason,
    attempts: job.attemptsMade,
    failedAt: job.finishedOn === undefined ? undefined : new Date(job.finishedOn).toISOString(),
  });

  const deadLetter: DeadLetter = {
    async list({ offset = 0, limit = 50 } = {}) {
      // Each queue's newest `offset + limit`, merged: enough for any page of the two together.
      const pages = await Promise.all(
        queues.map(async (queue) =>
          (await queue.getFailed(0, offset + limit - 1)).map((job) => entry(job, queue)),
        ),
      );
      return pages
        .flat()
        .sort((a, b) => (b.failedAt ?? '').localeCompare(a.failedAt ?? ''))
        .slice(offset, offset + limit);
    },

    async count() {
      const counts = await Promise.all(queues.map((queue) => queue.getFailedCount()));
      return counts.reduce((sum, count) => sum + count, 0);
    },

    async retry(id) {
      for (const queue of queues) {
        const job = await queue.getJob(id);
        if (job && (await retryAfresh(job))) return true;
      }
      return false;
    },

    async retryAll() {
      let total = 0;
      for (const queue of queues) {
        // Bounded by the count at the start: a job that fails again meanwhile waits for next time.
        const failed = await queue.getFailedCount();
        for (let retried = 0; retried < failed;) {
          const page = await queue.getFailed(0, Math.min(RETRY_PAGE, failed - retried) - 1);
          if (page.length === 0) break;
          await Promise.all(page.map(retryAfresh));
          retried += page.length;
        }
        total += failed;
      }
      return total;
    },

    async retryGroup({ handler, reason }) {
      const entries = await deadLetter.list({ limit: MOST_IN_A_GROUP_RETRY });
      let retried = 0;
      for (const entry of entries) {
        if (entry.handler !== handler || entry.reason !== reason) continue;
        if (await deadLetter.retry(entry.id)) retried += 1;
      }
      return retried;
    },
  };
  return deadLetter;
}

/** Failed jobs retried at once by retryAll. */
const RETRY_PAGE = 500;

function keyOf(delivery: unknown): string {
  return delivery !== null &&
    typeof delivery === 'object' &&
    'key' in delivery &&
    typeof delivery.key === 'string'
    ? delivery.key
    : '';
}
