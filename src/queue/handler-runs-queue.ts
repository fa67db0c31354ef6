/**
 * The `handler-runs` queue: where a handler's run of a delivery goes when its first attempt, made
 * while routing, did not complete it. Each job has its handler's attempts and backoff, so one
 * handler is retried without re-running the others, and its failed jobs are the dead letter.
 * How a run moves through it is in src/worker/runs.ts and docs/runs.md.
 */
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { deduplicationIdFor, type Delivery } from '../webhooks/delivery.js';
import type { JobRetention } from './deliveries-queue.js';

export const HANDLER_RUNS_QUEUE = 'handler-runs';

/**
 * The backoff type of every run job: the worker computes each retry's delay itself (see
 * run-policy.ts), because a run's first attempt happened before its job existed.
 */
export const RUN_BACKOFF_TYPE = 'handler-backoff';

export interface HandlerRunData {
  readonly delivery: Delivery;
  /** 1 when the routing job made the run's first attempt and it is to be retried. */
  readonly attemptsBefore?: number;
  /**
   * Set when the first attempt failed in a way retrying cannot fix: the job fails with it at once,
   * so the run is in the dead letter, and forgets it, so a retry from there runs the handler.
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
 * The run's job id: the delivery key's deduplication id and the handler's name, so a delivery has
 * one run per handler however often it is routed. Neither part contains `:`.
 */
export function handlerRunJobId(deliveryKey: string, handlerName: string): string {
  return `${deduplicationIdFor(deliveryKey)}.${handlerName}`;
}

export interface NewHandlerRun {
  readonly delivery: Delivery;
  readonly handler: string;
  /** The handler's attempts: a retry from the dead letter gets all of them again. */
  readonly attempts: number;
  readonly data?: Omit<HandlerRunData, 'delivery'>;
  /** How long the job waits before its first attempt. */
  readonly delayMs?: number;
}

/**
 * Adds a run. Safe to repeat (after a crash mid-way, say): BullMQ's deduplication keeps the run's
 * marker for `dedupeTtlSeconds` even after retention removes the finished job, so a run is queued
 * once however often it is added.
 */
export async function addHandlerRun(
  queue: Queue<HandlerRunData>,
  { delivery, handler, attempts, data = {}, delayMs = 0 }: NewHandlerRun,
  {
    dedupeTtlSeconds,
    retention = HANDLER_RUN_RETENTION,
  }: { dedupeTtlSeconds: number; retention?: JobRetention },
): Promise<void> {
  const jobId = handlerRunJobId(delivery.key, handler);
  const opts: JobsOptions = {
    ...retention,
    jobId,
    deduplication: { id: jobId, ttl: dedupeTtlSeconds * 1000 },
    attempts,
    backoff: { type: RUN_BACKOFF_TYPE },
    ...(delayMs > 0 ? { delay: delayMs } : {}),
  };
  await queue.add(handler, { delivery, ...data }, opts);
}

/** Whether a run of this id has been queued (within the deduplication TTL). */
export async function handlerRunQueued(
  queue: Queue<HandlerRunData>,
  runId: string,
): Promise<boolean> {
  return (await queue.getDeduplicationJobId(runId)) !== null;
}
