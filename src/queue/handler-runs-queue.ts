/**
 * The `handler-runs` queue: where a handler's run of a delivery goes when its first attempt, made
 * while routing, did not succeed. Each has its handler's own attempts and backoff, so one handler
 * is retried without re-running the others, and its failed jobs are the dead letter.
 */
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { jobIdFor, type Delivery } from '../webhooks/delivery.js';
import type { JobRetention } from './deliveries-queue.js';

export const HANDLER_RUNS_QUEUE = 'handler-runs';

export interface HandlerRunData {
  readonly delivery: Delivery;
  /** Set when the handler's `where` threw while routing; the run then fails with it. */
  readonly whereError?: string;
  /** Attempts made before this job was queued (the first one, made while routing). */
  readonly attemptsBefore?: number;
  /**
   * Set when the attempt made while routing failed in a way retrying cannot fix: the job fails
   * with it at once, so the run is in the dead letter, and forgets it, so a retry from there runs.
   */
  readonly failedFor?: string;
}

/** Failed runs are the dead letter, so they are kept longer than finished deliveries. */
export const HANDLER_RUN_RETENTION: JobRetention = {
  removeOnComplete: { age: 24 * 60 * 60, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 60 * 60, count: 100_000 },
};

export function createHandlerRunsQueue(connection: ConnectionOptions, prefix: string) {
  return new Queue<HandlerRunData>(HANDLER_RUNS_QUEUE, { connection, prefix });
}

/**
 * The run's job id: the delivery's job id (derived from its key) and the handler's name, so a
 * delivery has one run per handler however often it is routed. Neither part contains `:`.
 */
export function handlerRunJobId(deliveryKey: string, handlerName: string): string {
  return `${jobIdFor(deliveryKey)}.${handlerName}`;
}

/** How a handler's runs are retried; a worker's Handler has these fields. */
export interface RunPolicy {
  readonly name: string;
  readonly attempts: number;
  readonly backoff: {
    readonly type: 'exponential' | 'fixed';
    readonly delayMs: number;
    readonly jitter: number;
  };
}

export interface NewHandlerRun {
  readonly handler: RunPolicy;
  readonly whereError?: string | undefined;
  /** Attempts already made; the job gets the rest, and its backoff goes on from there. */
  readonly attemptsBefore?: number;
  readonly failedFor?: string;
  /** How long the job waits before its first attempt. */
  readonly delayMs?: number;
}

/**
 * Adds runs of one delivery. Safe to repeat (after a crash mid-way, say): BullMQ's deduplication
 * keeps each run's marker for `dedupeTtlSeconds` even after retention removes the finished job,
 * so a run is queued once however often it is added.
 */
export async function addHandlerRuns(
  queue: Queue<HandlerRunData>,
  delivery: Delivery,
  runs: readonly NewHandlerRun[],
  {
    dedupeTtlSeconds,
    retention = HANDLER_RUN_RETENTION,
  }: { dedupeTtlSeconds: number; retention?: JobRetention },
): Promise<void> {
  // One add per run rather than addBulk: addBulk's MULTI makes ioredis build a pipeline that
  // copies every BullMQ script onto it, a third of the routing cost; atomicity across runs is not
  // needed, since each add is deduplicated and a failed routing is simply repeated.
  await Promise.all(
    runs.map(({ handler, whereError, attemptsBefore = 0, failedFor, delayMs }) => {
      const jobId = handlerRunJobId(delivery.key, handler.name);
      const { type, delayMs: firstDelay, jitter } = handler.backoff;
      const opts: JobsOptions = {
        ...retention,
        jobId,
        deduplication: { id: jobId, ttl: dedupeTtlSeconds * 1000 },
        attempts: failedFor === undefined ? Math.max(1, handler.attempts - attemptsBefore) : 1,
        // Exponential backoff goes on doubling from where the earlier attempts left it.
        backoff: {
          type,
          delay: type === 'exponential' ? firstDelay * 2 ** attemptsBefore : firstDelay,
          jitter,
        },
        ...(delayMs ? { delay: delayMs } : {}),
      };
      const data: HandlerRunData = {
        delivery,
        ...(whereError === undefined ? {} : { whereError }),
        ...(attemptsBefore > 0 ? { attemptsBefore } : {}),
        ...(failedFor === undefined ? {} : { failedFor }),
      };
      return queue.add(handler.name, data, opts);
    }),
  );
}

/** The key of a run's deduplication marker: it exists once the run has been queued. */
export function handlerRunQueuedKey(queue: Queue<HandlerRunData>, runId: string): string {
  return `${queue.keys.de}:${runId}`;
}
