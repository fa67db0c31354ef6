/**
 * The worker runtime: one BullMQ worker consuming `deliveries` (each job routes a delivery: it
 * adds its runs), one per handler consuming that handler's queue (every attempt of its runs), and
 * how they stop. What happens to a run is in runs.ts. BullMQ recovers a worker's blocking
 * connection after a failover by itself (docs/high-availability.md): nothing here watches it.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, Queue, Worker, type Job } from 'bullmq';
import type { ApiClient } from '../api/client.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import {
  DELIVERIES_QUEUE,
  DELIVERY_JOB_RETENTION,
  type JobRetention,
} from '../queue/deliveries-queue.js';
import {
  createRunQueues,
  HANDLER_RUN_RETENTION,
  runQueueName,
  successKeyOf,
  type HandlerRunData,
  type RunQueues,
} from '../runs/run-queues.js';
import {
  CLOSE_WITHIN_MS,
  closeConnection,
  duplicateConnection,
  isConnectionLost,
  settlesWithin,
  type RedisConnection,
} from '../queue/redis.js';
import type { ReplicaAcks } from '../queue/replicated-writes.js';
import { watchForFullDeadLetters } from '../queue/full-dead-letter.js';
import { trimFinishedJobs } from '../queue/trim-finished-jobs.js';
import { readDelivery, type Delivery } from '../webhooks/delivery.js';
import { withTelemetry } from '../tracing/tracer.js';
import { createSimilarGrouping } from '../grouping/similar-grouping.js';
import { createSimilarGroups } from '../grouping/similar-groups.js';
import { ROUTING } from '../history/delivery-history.js';
import { createHistoryWriter } from '../history/history-writer.js';
import {
  announceHandlers,
  mergeByName,
  readRunningHandlers,
  type RosterEntry,
} from '../runs/handler-roster.js';
import type { SimilarWindow } from '../similar/similar-facts.js';
import { createCompletionLedger } from './completion-ledger.js';
import type { Handler } from './handler.js';
import { limiterOf } from './handler-limiter.js';
import { createRuns } from './runs.js';

export interface WorkerRuntimeOptions {
  /** A worker connection (see createWorkerConnection); BullMQ adds its blocking ones to it. */
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly handlers: readonly Handler[];
  readonly api: ApiClient;
  readonly logger: Logger;
  /** Jobs run at once by this process, per queue. Default: 10. */
  readonly concurrency?: number;
  /** How long a run's markers are kept; see DEDUPE_TTL_SECONDS. */
  readonly dedupeTtlSeconds: number;
  /** HISTORY_MAX_DELIVERIES: most deliveries the history keeps. Default: 1 000 000. */
  readonly historyMaxDeliveries?: number;
  /** ACK_REPLICAS: how many replicas must hold a run's success before this process forgets it. */
  readonly ackReplicas?: ReplicaAcks;
  /**
   * How long a job's lock lasts without renewal. A worker that dies mid-job loses its lock after
   * this long, and another worker takes the job over. Default: 30 000.
   */
  readonly lockDurationMs?: number;
  /** Retention of handler runs; the default keeps failed runs (the dead letter) 30 days. */
  readonly retention?: JobRetention;
  /**
   * Retention of deliveries, as the receiver adds them (deliveryRetention), by which the worker
   * trims them. Default: DELIVERY_JOB_RETENTION.
   */
  readonly deliveryRetention?: JobRetention;
  /** Counts and times handler runs by outcome. */
  readonly metrics?: Pick<
    Metrics,
    'handlerRuns' | 'handlerRunDuration' | 'similarDuration' | 'historyDropped'
  >;
  /**
   * TRIAGE_DRY_RUN: auto-triage matches and logs, and sends nothing. Said on the start line, so a
   * dry run is not taken for a live one. Default: false.
   */
  readonly dryRun?: boolean;
  /**
   * Grouping similar feedback in routing (SIMILAR, docs/similar.md): on when given. Off, routing
   * writes no grouping key and runs get no `ctx.similar`. Default: off.
   */
  readonly similar?: SimilarSettings | undefined;
  /**
   * How often the worker writes its handlers to the roster again, and reads the other workers'
   * (handler-roster.ts). Default: ANNOUNCE_EVERY_MS.
   */
  readonly announceEveryMs?: number;
  /**
   * How often the worker removes the finished jobs past their retention that BullMQ does not
   * (trim-finished-jobs.ts). Default: TRIM_EVERY_MS.
   */
  readonly trimEveryMs?: number;
}

export interface SimilarSettings {
  /** SIMILAR_THRESHOLD. */
  readonly threshold: number;
  /** SIMILAR_KEEP: most deliveries kept per project. */
  readonly keep: number;
}

export interface WorkerRuntime {
  readonly deliveries: Queue<Delivery>;
  /** The queues of this worker's handlers' runs (and any other asked for on its connection). */
  readonly runQueues: RunQueues;
  /**
   * Stops taking jobs and waits for running ones; after `timeoutMs` aborts them through their
   * AbortSignal (they run again elsewhere), and abandons a handler that ignores it
   * ABANDON_AFTER_MS later (docs/runs.md, "Shutdown"). Resolves within about `timeoutMs` +
   * ABANDON_AFTER_MS + a few seconds, whatever the handlers and Redis do.
   */
  close(timeoutMs?: number): Promise<void>;
}

/** How long handlers get to stop after their signal fired, before they are abandoned. */
export const ABANDON_AFTER_MS = 5_000;

/** How often a running worker trims `deliveries` and the handlers' queues by age (bounded). */
export const TRIM_EVERY_MS = 10 * 60_000;

/** How often a running worker writes its handlers to the roster, and reads the others'. */
export const ANNOUNCE_EVERY_MS = 5_000;

/**
 * A handler written to the roster within this many announcements is one a running worker has:
 * routing adds its runs, here too. Once its last worker has stopped, routing goes on adding them
 * this long, and they wait in its queue for a worker that has it.
 */
const RUNNING_WITHIN_ANNOUNCEMENTS = 6;

/** A job that stalls (its worker died) more often than this fails instead of looping forever. */
const MAX_STALLED_COUNT = 3;

export async function startWorkerRuntime(options: WorkerRuntimeOptions): Promise<WorkerRuntime> {
  const { connection, prefix, handlers, logger } = options;
  const concurrency = options.concurrency ?? 10;
  const lockDuration = options.lockDurationMs ?? 30_000;
  const onQueueError = (error: Error) => logger.debug({ error: error.message }, 'queue error');
  const runQueues = createRunQueues(connection, prefix, onQueueError);
  const completions = createCompletionLedger({
    connection,
    prefix,
    ttlSeconds: options.dedupeTtlSeconds,
    logger,
    confirmWithinMs: Math.floor(lockDuration / 2),
    ...(options.ackReplicas ? { acks: options.ackReplicas } : {}),
  });
  const history = createHistoryWriter({
    connection,
    prefix,
    ttlSeconds: options.dedupeTtlSeconds,
    logger,
    ...(options.historyMaxDeliveries ? { mostKept: options.historyMaxDeliveries } : {}),
    dropped: (entries) => options.metrics?.historyDropped.inc(entries),
  });
  // Grouping checks the windows of every running worker's handlers, so a crossing is found
  // whichever worker routes the delivery that makes it (the roster, read in `announce`).
  let windowsElsewhere: readonly SimilarWindow[] = [];
  const similar = options.similar
    ? createSimilarGrouping({
        connection,
        prefix,
        threshold: options.similar.threshold,
        keep: options.similar.keep,
        ttlSeconds: options.dedupeTtlSeconds,
        windows: handlers.flatMap((handler) => handler.similarWindows),
        windowsElsewhere: () => windowsElsewhere,
        logger,
      })
    : undefined;
  // The roster (handler-roster.ts), written before the workers take a delivery, so that routing
  // adds runs for the handlers other workers have, and again while this worker runs (it forgets
  // a handler not written for a while). Read as every running worker's, this one's included:
  // another may have a handler of the same name with other events or windows (a rolling deploy).
  const everyMs = options.announceEveryMs ?? ANNOUNCE_EVERY_MS;
  let running: readonly RosterEntry[] = [];
  const readRunning = async () =>
    (running = mergeByName(await readRunningHandlers(connection, prefix)));
  const self = { id: randomUUID(), runningForMs: everyMs * RUNNING_WITHIN_ANNOUNCEMENTS };
  const announce = async () => {
    await announceHandlers(connection, prefix, handlers, self);
    const windows = (await readRunning()).flatMap((entry) => entry.similarWindows ?? []);
    if (JSON.stringify(windows) !== JSON.stringify(windowsElsewhere)) windowsElsewhere = windows;
  };
  // Before any BullMQ worker: a start that fails here closes the ledger (its listeners, and with
  // ACK_REPLICAS its connection), so a caller given the error has nothing to close.
  await announce().catch(async (error: unknown) => {
    await completions.close();
    throw error;
  });
  // One at a time: while Redis is away, the connection holds one, not one per tick.
  let announced: Promise<void> | undefined;
  const announcing = setInterval(() => {
    announced ??= announce()
      .catch((error: Error) =>
        logger.debug({ error: error.message }, 'could not announce the handlers again'),
      )
      .finally(() => (announced = undefined));
  }, everyMs);
  announcing.unref();
  const deliveries = new Queue<Delivery>(DELIVERIES_QUEUE, withTelemetry({ connection, prefix }));
  deliveries.on('error', onQueueError);
  // `deliveries` and every handler's queue the roster knows, retired ones included: BullMQ trims
  // a queue only as its jobs finish. One pass at a time, as for the announcements.
  let trimmed: Promise<unknown> | undefined;
  const trim = (queues: Queue[], retention: JobRetention) =>
    trimFinishedJobs(queues, { retention, dedupeTtlSeconds: options.dedupeTtlSeconds, logger });
  const trimming = setInterval(() => {
    trimmed ??= trim([deliveries], options.deliveryRetention ?? DELIVERY_JOB_RETENTION)
      .then(() => runQueues.all())
      .then((queues) => trim(queues, options.retention ?? HANDLER_RUN_RETENTION))
      .catch((error: Error) => logger.debug({ error: error.message }, 'could not trim the queues'))
      .finally(() => (trimmed = undefined));
  }, options.trimEveryMs ?? TRIM_EVERY_MS);
  trimming.unref();
  // A run reads its group's first as it is now when it starts (runs.ts).
  const groups = options.similar
    ? createSimilarGroups({ connection, prefix, ttlSeconds: options.dedupeTtlSeconds, logger })
    : undefined;
  const runs = createRuns({
    ...options,
    runQueues,
    completions,
    history,
    similar,
    roster: { running: () => running, read: readRunning, everyMs },
    similarWhenRunning:
      groups && ((key, project, routed) => groups.whenRunning(key, project, routed)),
  });

  const workerOptions = {
    connection,
    prefix,
    concurrency,
    lockDuration,
    // Look for stalled jobs as often as a lock can expire, so a dead worker's jobs move on soon.
    stalledInterval: lockDuration,
    maxStalledCount: MAX_STALLED_COUNT,
  };
  // Each worker on a connection of its own: abandoning one cuts off only that one, while the
  // queues, the completion ledger and the history writer keep the process's to the end.
  const startWorker = (make: (own: RedisConnection) => Worker) => {
    const own = duplicateConnection(connection);
    // The process's connection already reports an outage, once, and its end; this one's errors
    // are the same ones.
    own.on('error', (error: Error) =>
      logger.debug({ error: error.message }, 'worker connection error'),
    );
    // A BullMQ worker emits the errors of its connections (this one and the blocking one it adds)
    // at every reconnect attempt: those of an outage are the same ones again. Anything else is news.
    const onError = (error: Error) => {
      const outage = isConnectionLost(own, error) || isConnectionLost(connection, error);
      logger[outage ? 'debug' : 'warn']({ error: error.message }, 'worker error');
    };
    return { worker: make(own).on('error', onError), own };
  };

  const deadLetterDrops = watchForFullDeadLetters({ logger });
  // A job that failed for good (a failed attempt to be retried has no finish time; BullMQ emits
  // `failed` for one that stalled too often once a worker takes it next): its history says so,
  // and a warning when its queue's dead letter is full. A failed routing's entry says `routing`.
  const failedForGood = (job: Job, handler: string, queue: Queue) => {
    const routing = handler === ROUTING;
    if (job.finishedOn) void deadLetterDrops(queue, job);
    const read = readDelivery(routing ? job.data : (job.data as Partial<HandlerRunData>).delivery);
    if (!job.finishedOn || !read.ok) return;
    if (routing) history.routed(read.delivery, job.id!, []);
    history.finished(read.delivery, handler, {
      state: 'failed',
      at: new Date(job.finishedOn).toISOString(),
      reason: job.failedReason,
    });
  };
  const deliveriesWorker = startWorker((own) =>
    new Worker(
      DELIVERIES_QUEUE,
      runs.route,
      withTelemetry({ ...workerOptions, connection: own }),
    ).on('failed', (job) => job && failedForGood(job, ROUTING, deliveries)),
  );
  const handlerWorkers = handlers.map((handler) =>
    startWorker((own) =>
      new Worker<HandlerRunData>(
        runQueueName(handler.name),
        runs.run,
        withTelemetry({
          ...workerOptions,
          connection: own,
          limiter: limiterOf(handler),
          settings: { backoffStrategy: runs.backoff },
        }),
      )
        // Logged by startWorker; a refused completion for a lost lock also writes the markers.
        .on('error', (error: Error) => {
          if (isLockLost(error)) completions.lockLost();
        })
        .on('completed', (job) => {
          const successKey = successKeyOf(job);
          if (successKey) completions.confirmed(successKey, job.id!);
        })
        .on('failed', (job) => job && failedForGood(job, job.name, runQueues.of(handler.name))),
    ),
  );
  const workers = [deliveriesWorker, ...handlerWorkers];

  let closing: Promise<void> | undefined;
  const close = (timeoutMs = 30_000) => {
    closing ??= (async () => {
      clearInterval(announcing);
      clearInterval(trimming);
      // A pass under way still uses the queues and the connection, which the caller closes next.
      const passes = settlesWithin(Promise.all([announced, trimmed]), CLOSE_WITHIN_MS);
      const graceful = Promise.all(
        workers.map(({ worker, own }) => worker.close().then(() => closeConnection(own))),
      );
      if (!(await settlesWithin(graceful, timeoutMs))) {
        const running = runs.abortAll(new Error('worker shutting down'));
        logger.warn({ running }, 'shutdown timeout: aborting running handlers');
        if (!(await settlesWithin(graceful, ABANDON_AFTER_MS))) {
          logger.error(
            { runs: runs.inFlight() },
            'workers still not closed after their handlers were aborted (a handler ignores its signal, or Redis is away): abandoning them; a job still running runs again elsewhere once its lock expires',
          );
          for (const { worker, own } of workers) {
            // BullMQ's disconnect waits for an end that a connection already down never sees.
            void worker.disconnect().catch(() => undefined);
            own.disconnect();
          }
        }
      }
      await settlesWithin(history.close(), CLOSE_WITHIN_MS);
      await completions.close();
      await passes;
      // Queues wait for Redis to close; a Redis that is away does not hold the exit.
      await settlesWithin(Promise.all([runQueues.close(), deliveries.close()]), CLOSE_WITHIN_MS);
    })();
    return closing;
  };

  try {
    await Promise.all(workers.map(({ worker }) => worker.waitUntilReady()));
    await warnOfGlobalRateLimits(runQueues, handlers, logger);
  } catch (error) {
    // Started in part: what was started stops, so a caller given the error has nothing to close.
    await close(CLOSE_WITHIN_MS);
    throw error;
  }
  logger.info(
    {
      handlers: handlers.map((handler) => handler.name),
      concurrency,
      ...(options.dryRun ? { dryRun: true } : {}),
    },
    'worker started',
  );
  return { deliveries, runQueues, close };
}

/**
 * BullMQ's error for a job whose lock this worker no longer has ("Missing lock", or another
 * worker's): a completion it refused, whose job the stalled check hands to a worker again.
 */
function isLockLost(error: Error): boolean {
  const { code } = error as { code?: unknown };
  return code === ErrorCode.JobLockNotExist || code === ErrorCode.JobLockMismatch;
}

/** A global rate limit on a handler's queue is counted over its workers' limiter's duration: say so. */
async function warnOfGlobalRateLimits(
  runQueues: RunQueues,
  handlers: readonly Handler[],
  logger: Logger,
): Promise<void> {
  for (const handler of handlers) {
    const limit = await runQueues.of(handler.name).getGlobalRateLimit();
    if (!limit) continue;
    const countedOverMs = limiterOf(handler).duration;
    logger.warn(
      { queue: runQueueName(handler.name), ...limit, countedOverMs },
      `a global rate limit is set on this handler's queue: BullMQ counts its ${limit.max} runs over the workers' limiter (${countedOverMs} ms), not over its ${limit.duration} ms; remove it (Queue.removeGlobalRateLimit) and give the handler its own: defineHandler({ rateLimit: { max: ${limit.max}, durationMs: ${limit.duration} } })`,
    );
  }
}
