/**
 * The `handler-runs` queue: where a handler's run of a delivery goes when its first attempt, made
 * while routing, did not complete it. Each job has its handler's attempts and backoff, so one
 * handler is retried without re-running the others, and its failed jobs are the dead letter.
 * How a run moves through it is in src/worker/runs.ts and docs/runs.md.
 */
import { Queue, type ConnectionOptions, type Job, type JobsOptions } from 'bullmq';
import { deduplicationIdFor, type Delivery } from '../webhooks/delivery.js';
import type { JobRetention } from './deliveries-queue.js';

export const HANDLER_RUNS_QUEUE = 'handler-runs';

/**
 * The backoff type of every run job: the worker computes each retry's delay itself (see
 * run-policy.ts), because a run's first attempt happened before its job existed.
 */
export const RUN_BACKOFF_TYPE = 'handler-backoff';

/** One attempt of a run, kept for the console: its start, how long it took, and what came of it. */
export interface AttemptRecord {
  /** 1 for the first. */
  readonly attempt: number;
  /** The handler's attempts when it was made: attempt 2 of 8. */
  readonly of: number;
  /** ISO 8601 UTC. */
  readonly startedAt: string;
  readonly ms: number;
  readonly outcome: 'completed' | 'retrying' | 'delayed' | 'failed' | 'interrupted';
  /** What the handler threw. */
  readonly error?: string;
}

export interface HandlerRunData {
  readonly delivery: Delivery;
  /**
   * The first attempt, made while routing, that did not complete the run. Kept when the job
   * forgets how it got here, so the console can show it; later attempts are the job's logs.
   */
  readonly firstAttempt?: AttemptRecord;
  /** 1 when the routing job made the run's first attempt and it is to be retried. */
  readonly attemptsBefore?: number;
  /**
   * Set when the first attempt failed in a way retrying cannot fix: the job fails with it at once,
   * so the run is in the dead letter, and forgets it, so a retry from there runs the handler.
   */
  readonly failedFor?: string;
}

/** Most attempt records a run's job keeps: rate-limit waits do not spend attempts, so cap them. */
export const MOST_ATTEMPT_RECORDS = 100;

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
    keepLogs: MOST_ATTEMPT_RECORDS,
    ...(delayMs > 0 ? { delay: delayMs } : {}),
  };
  await queue.add(handler, { delivery, ...data }, opts);
}

/**
 * A run's data once it starts afresh (a retry from the dead letter, a run again): how it got here
 * (the first attempt's count or reason) is forgotten, so it gets all of its handler's attempts;
 * the first attempt's record stays, for the console.
 */
export function startingAfresh({ delivery, firstAttempt }: HandlerRunData): HandlerRunData {
  return firstAttempt ? { delivery, firstAttempt } : { delivery };
}

/** Writes an attempt's record as a line of its run's job's logs. */
export async function logAttempt(job: Job<HandlerRunData>, record: AttemptRecord): Promise<void> {
  await job.log(JSON.stringify(record));
}

/** The attempt records of a run's job: its first attempt's, then its logs' (older ones unread). */
export async function readAttempts(
  queue: Queue<HandlerRunData>,
  job: Job<HandlerRunData>,
): Promise<AttemptRecord[]> {
  const { logs } = await queue.getJobLogs(job.id!, 0, MOST_ATTEMPT_RECORDS - 1);
  const logged = logs.flatMap((line) => {
    const record = parseAttempt(line);
    return record ? [record] : [];
  });
  return job.data.firstAttempt ? [job.data.firstAttempt, ...logged] : logged;
}

function parseAttempt(line: string): AttemptRecord | undefined {
  try {
    const value: unknown = JSON.parse(line);
    const record = value as Partial<AttemptRecord> | null;
    return typeof record?.attempt === 'number' && typeof record.startedAt === 'string'
      ? (record as AttemptRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a run of this id has been queued (within the deduplication TTL). */
export async function handlerRunQueued(
  queue: Queue<HandlerRunData>,
  runId: string,
): Promise<boolean> {
  return (await queue.getDeduplicationJobId(runId)) !== null;
}
