/**
 * The dead letter: handler runs that used up their attempts, or failed in a way retrying cannot
 * fix, kept with the reason until an operator retries them (or retention drops them, after 30
 * days by default).
 */
import type { Queue } from 'bullmq';
import type { HandlerRunData } from './handler-runs-queue.js';

export interface DeadLetterEntry {
  readonly id: string;
  readonly handler: string;
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
  /** Queues one failed run again, with fresh attempts. False when there is no such failed run. */
  retry(id: string): Promise<boolean>;
  /** Queues every failed run again; returns how many there were. */
  retryAll(): Promise<number>;
}

export function createDeadLetter(queue: Queue<HandlerRunData>): DeadLetter {
  return {
    async list({ offset = 0, limit = 50 } = {}) {
      const jobs = await queue.getFailed(offset, offset + limit - 1);
      return jobs.map((job) => ({
        id: job.id ?? '',
        handler: job.name,
        deliveryKey: job.data.delivery.key,
        reason: job.failedReason,
        attempts: job.attemptsMade,
        failedAt: job.finishedOn === undefined ? undefined : new Date(job.finishedOn).toISOString(),
      }));
    },

    count: () => queue.getFailedCount(),

    async retry(id) {
      const job = await queue.getJob(id);
      if (!job || !(await job.isFailed())) return false;
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      return true;
    },

    async retryAll() {
      const failed = await queue.getFailedCount();
      if (failed > 0) await queue.retryJobs({ state: 'failed', count: 1000 });
      return failed;
    },
  };
}
