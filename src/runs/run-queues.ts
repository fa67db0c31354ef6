/**
 * What a run is in Redis: one handler's work on one delivery is one job of its handler's own
 * queue, `runs-<handler>`, from its first attempt, so BullMQ's attempts, backoff, delay, rate limit
 * and failed state are the run's. docs/runs.md draws its whole life.
 */
import { Queue, type ConnectionOptions, type Job, type JobsOptions } from 'bullmq';
import { deduplicationIdFor, type Delivery } from '../webhooks/delivery.js';
import type { SimilarFacts } from '../similar/similar-facts.js';
import { keepCompletedFor, type JobRetention } from '../queue/deliveries-queue.js';
import type { RedisConnection } from '../queue/redis.js';
import { withTelemetry } from '../tracing/tracer.js';
import { readRoster } from './handler-roster.js';

/** A handler's name (defineHandler): it names a queue too, and BullMQ refuses `:` there. */
export const HANDLER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The queue of one handler's runs. */
export function runQueueName(handler: string): string {
  return `runs-${handler}`;
}

/**
 * The queues of handlers' runs on one connection, opened as they are asked for and kept until
 * `close`. Which handlers there are is the roster's word (handler-roster.ts): every worker writes
 * its own at start.
 */
export interface RunQueues {
  of(handler: string): Queue<HandlerRunData>;
  /**
   * The handlers that have a queue: those a worker started with within the roster's memory, and
   * those asked for here already. Sorted.
   */
  handlers(): Promise<string[]>;
  all(): Promise<Queue<HandlerRunData>[]>;
  close(): Promise<void>;
}

export function createRunQueues(
  connection: RedisConnection,
  prefix: string,
  onError: (error: Error) => void = () => {},
): RunQueues {
  const opened = new Map<string, Queue<HandlerRunData>>();
  const of = (handler: string) => {
    let queue = opened.get(handler);
    if (!queue) {
      queue = createRunQueue(connection, prefix, handler);
      queue.on('error', onError);
      opened.set(handler, queue);
    }
    return queue;
  };
  const handlers = async () => {
    const roster = await readRoster(connection, prefix, { includeRetired: true });
    return [...new Set([...opened.keys(), ...roster.map(({ name }) => name)])].sort();
  };
  return {
    of,
    handlers,
    all: async () => (await handlers()).map(of),
    close: async () => {
      await Promise.all([...opened.values()].map((queue) => queue.close()));
    },
  };
}

export function createRunQueue(connection: ConnectionOptions, prefix: string, handler: string) {
  return new Queue<HandlerRunData>(runQueueName(handler), withTelemetry({ connection, prefix }));
}

/**
 * The handler whose queue a run id belongs to: a run's id is its delivery job's id, a `.`, and
 * the handler's name (runJobId). Undefined for an id of no run (a delivery job's).
 */
export function handlerOfRunId(runId: string): string | undefined {
  const dot = runId.indexOf('.');
  return dot > 0 && dot < runId.length - 1 ? runId.slice(dot + 1) : undefined;
}

/** What a routed delivery's job returns: the handlers that took it, one run each. */
export interface RoutingResult {
  readonly handlers: readonly string[];
}

/** One attempt of a run, kept for the console: its start, how long it took, and what came of it. */
export interface AttemptRecord {
  /** 1 for the first. */
  readonly attempt: number;
  /** The run's attempts when it was made: attempt 2 of 8. */
  readonly of: number;
  /** ISO 8601 UTC. */
  readonly startedAt: string;
  readonly ms: number;
  readonly outcome: 'completed' | 'retrying' | 'delayed' | 'failed' | 'interrupted';
  /** What the handler threw. */
  readonly error?: string;
}

/** A run job's data: the delivery, so an attempt reads nothing else. */
export interface HandlerRunData {
  readonly delivery: Delivery;
  /**
   * 0, or when an operator last started the run afresh (restart.ts: the time in ms, and more than
   * the life before), or when a backfill added it: no other run of the delivery's key has it.
   * See runSuccessKey.
   */
  readonly life?: number;
  /** What grouping found for the delivery (ctx.similar); absent when SIMILAR=off. */
  readonly similar?: SimilarFacts;
}

/** Most attempt records a run's job keeps: rate-limit waits do not spend attempts, so cap them. */
export const MOST_ATTEMPT_RECORDS = 100;

/** Failed runs are the dead letter, so they are kept longer than finished deliveries. */
export const HANDLER_RUN_RETENTION: JobRetention = {
  removeOnComplete: { age: 24 * 60 * 60, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 60 * 60, count: 100_000 },
};

/** A run's retention: its completed job kept for COMPLETED_JOB_RETENTION_SECONDS, whoever adds it. */
export function handlerRunRetention(completedJobRetentionSeconds: number): JobRetention {
  return keepCompletedFor(HANDLER_RUN_RETENTION, completedJobRetentionSeconds);
}

/**
 * A run's job id: its delivery's job id and the handler's name. A delivery job is made per
 * accepted request (a random id), so a delivery received again after DEDUPE_TTL_SECONDS gets
 * runs of its own, while a routing job that runs twice adds the same runs. Neither part contains
 * `:`; a delivery job's id contains no `.`, so the first `.` splits the two.
 */
export function runJobId(deliveryJobId: string, handlerName: string): string {
  return `${deliveryJobId}.${handlerName}`;
}

/**
 * What a run's success is known by, in the completion ledger and as its marker: the handler, the
 * delivery's key and the run's life, not its job id, which a delivery a failover lost comes back
 * without (docs/runs.md, "What holds throughout"). Handler names contain no `:`, nor does a
 * deduplication id.
 */
export function runSuccessKey(handlerName: string, deliveryKey: string, life = 0): string {
  const key = `${handlerName}:${deduplicationIdFor(deliveryKey)}`;
  return life > 0 ? `${key}:${life}` : key;
}

/** A run job's life: 0, or when it was last started afresh (see HandlerRunData). */
export function lifeOf(job: Job<unknown>): number {
  const life = (job.data as Partial<HandlerRunData> | undefined)?.life;
  return typeof life === 'number' && Number.isSafeInteger(life) && life > 0 ? life : 0;
}

/** The success key of a run job; undefined for a job not shaped as a run (a delivery's, say). */
export function successKeyOf(job: Job<unknown>): string | undefined {
  const key = (job.data as Partial<HandlerRunData> | undefined)?.delivery?.key;
  return typeof key === 'string' ? runSuccessKey(job.name, key, lifeOf(job)) : undefined;
}

/**
 * The key of the marker that says a run's handler succeeded (see completion-ledger.ts). It
 * names no queue: a run's success is the same whichever queue holds its job.
 */
export function succeededMarkerKey(prefix: string, successKey: string): string {
  return `${prefix}:run-succeeded:${successKey}`;
}

export interface NewRun {
  readonly handler: string;
  /** The handler's attempts: the run's, and again after an operator's retry. */
  readonly attempts: number;
  /**
   * A life no earlier run of this handler on this delivery had (HandlerRunData.life): a run a
   * backfill adds where an earlier one's job is gone. Routing's runs have none (life 0).
   */
  readonly life?: number;
}

export interface AddRunsOptions {
  /** How long a run's deduplication marker outlives its job; see DEDUPE_TTL_SECONDS. */
  readonly dedupeTtlSeconds: number;
  readonly retention?: JobRetention | undefined;
}

/**
 * Adds one job per run of a routed delivery. Safe to repeat: each job's id is also its
 * deduplication id, kept for `dedupeTtlSeconds` even after retention removes the finished job, so
 * a routing job that runs again (after a crash, or a retry) adds only what is missing.
 *
 * The adds go out together, in the same tick; they are not all-or-none, and need not be: a
 * failed add fails the routing job, whose retry adds the rest. (BullMQ's `addBulk` is not
 * all-or-none either: it is a pipeline, bullmq#3451, and an ioredis pipeline copies every Lua
 * script of the connection when it is made, which costs more than the adds themselves. The
 * atomic FlowProducer.addBulk takes no deduplication.)
 */
export async function addRuns(
  queues: Pick<RunQueues, 'of'>,
  routed: {
    readonly deliveryJobId: string;
    readonly delivery: Delivery;
    readonly similar?: SimilarFacts | undefined;
  },
  runs: readonly NewRun[],
  { dedupeTtlSeconds, retention }: AddRunsOptions,
): Promise<void> {
  await Promise.all(
    runs.map(({ handler, attempts, life }) => {
      const data: HandlerRunData = {
        delivery: routed.delivery,
        ...(life ? { life } : {}),
        ...(routed.similar ? { similar: routed.similar } : {}),
      };
      const jobId = runJobId(routed.deliveryJobId, handler);
      const opts = runJobOptions(jobId, attempts, { dedupeTtlSeconds, retention });
      return queues.of(handler).add(handler, data, opts);
    }),
  );
}

/** How every run job is added: under its id, which is also its deduplication id. */
export function runJobOptions(
  jobId: string,
  attempts: number,
  { dedupeTtlSeconds, retention = HANDLER_RUN_RETENTION }: AddRunsOptions,
): JobsOptions {
  return {
    jobId,
    deduplication: { id: jobId, ttl: dedupeTtlSeconds * 1000 },
    attempts,
    // No type of BullMQ's: the worker's backoffStrategy gives the delay its log line reports.
    backoff: { type: 'handler-backoff' },
    keepLogs: MOST_ATTEMPT_RECORDS,
    // Last: on Node 20, fields added after a leading spread cost ~4 µs an object (a run's add).
    ...retention,
  };
}

/** Writes the record of an attempt that did not complete its run, as a line of the job's logs. */
export async function logAttempt(job: Job<unknown>, record: AttemptRecord): Promise<void> {
  await job.log(JSON.stringify(record));
}

/**
 * A run's attempts, oldest first: the ones that did not complete it from its logs (older ones
 * unread), and the one that completed it from the job's own times.
 */
export async function readAttempts(
  queue: Queue<HandlerRunData>,
  job: Job<HandlerRunData>,
  completed: boolean,
): Promise<AttemptRecord[]> {
  const { logs } = await queue.getJobLogs(job.id!, 0, MOST_ATTEMPT_RECORDS - 1);
  const logged = logs.flatMap(parseAttempt);
  const last = completed ? completingAttempt(job) : undefined;
  return last ? [...logged, last] : logged;
}

/** The record of the attempt that completed a run's job, from the job's own times. */
export function completingAttempt(job: Job<unknown>): AttemptRecord | undefined {
  if (job.processedOn === undefined || job.finishedOn === undefined) return undefined;
  return {
    // BullMQ counts the completion as an attempt made.
    attempt: job.attemptsMade,
    of: job.opts.attempts ?? 1,
    startedAt: new Date(job.processedOn).toISOString(),
    ms: job.finishedOn - job.processedOn,
    outcome: 'completed',
  };
}

/** A log line's attempt record, or none for a line that is not one. */
function parseAttempt(line: string): AttemptRecord[] {
  try {
    const record = JSON.parse(line) as Partial<AttemptRecord> | null;
    return typeof record?.attempt === 'number' && typeof record.startedAt === 'string'
      ? [record as AttemptRecord]
      : [];
  } catch {
    return [];
  }
}
