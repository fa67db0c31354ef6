/**
 * The worker: consumes `deliveries`, fans each one out into a `handler-runs` job per matching
 * handler, and runs those. Failure policy, in one place:
 * - a rate limit (the API's 429, or our shared limit) delays the run without spending an attempt;
 * - what retrying cannot fix (UnrecoverableError, the API's 400/401/403/404/422) fails at once;
 * - anything else is retried with the handler's backoff, then lands in the dead letter;
 * - a run cut short by shutdown goes back to the queue without spending an attempt;
 * - a run whose handler succeeded while Redis was away is not run again when Redis is back.
 */
import {
  DelayedError,
  UnrecoverableError,
  WaitingError,
  Worker,
  type Job,
  type Queue,
} from 'bullmq';
import type { Redis } from 'ioredis';
import { isApiRateLimitedError, isFinalApiError } from '../api/api-errors.js';
import type { ApiClient } from '../api/client.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { DELIVERIES_QUEUE, type JobRetention } from '../queue/deliveries-queue.js';
import {
  addHandlerRuns,
  createHandlerRunsQueue,
  HANDLER_RUNS_QUEUE,
  type HandlerRunData,
} from '../queue/handler-runs-queue.js';
import type { Delivery } from '../webhooks/delivery.js';
import type { Handler } from './handler.js';
import { createCompletionLedger } from './completion-ledger.js';
import { route } from './routing.js';

export interface WorkerRuntimeOptions {
  /** A worker connection (see createWorkerConnection); BullMQ adds its blocking ones to it. */
  readonly connection: Redis;
  readonly prefix: string;
  readonly handlers: readonly Handler[];
  readonly api: ApiClient;
  readonly logger: Logger;
  /** Jobs run at once by this process, per queue. Default: 10. */
  readonly concurrency?: number;
  /** How long a run's markers are kept; see DEDUPE_TTL_SECONDS. */
  readonly dedupeTtlSeconds: number;
  /**
   * How long a job's lock lasts without renewal. A worker that dies mid-job loses its lock after
   * this long, and another worker takes the job over. Default: 30 000.
   */
  readonly lockDurationMs?: number;
  /** Retention of handler runs; the default keeps failed runs (the dead letter) 30 days. */
  readonly retention?: JobRetention;
  /** Counts and times handler runs by outcome. */
  readonly metrics?: Pick<Metrics, 'handlerRuns' | 'handlerRunDuration'>;
}

export interface WorkerRuntime {
  readonly handlerRuns: Queue<HandlerRunData>;
  /**
   * Stops taking jobs and waits for running ones; after `timeoutMs` it aborts them through
   * their AbortSignal, and they go back to the queue to run again elsewhere.
   */
  close(timeoutMs?: number): Promise<void>;
}

/** A job that stalls (its worker died) more often than this fails instead of looping forever. */
const MAX_STALLED_COUNT = 3;

export async function startWorkerRuntime(options: WorkerRuntimeOptions): Promise<WorkerRuntime> {
  const { connection, prefix, handlers, api, logger, dedupeTtlSeconds } = options;
  const concurrency = options.concurrency ?? 10;
  const lockDuration = options.lockDurationMs ?? 30_000;
  const byName = new Map(handlers.map((handler) => [handler.name, handler]));
  const handlerRuns = createHandlerRunsQueue(connection, prefix);
  handlerRuns.on('error', (error) => logger.debug({ error: error.message }, 'queue error'));
  const runsInFlight = new Set<AbortController>();
  const completions = createCompletionLedger({
    connection,
    prefix,
    ttlSeconds: dedupeTtlSeconds,
    logger,
  });
  let shuttingDown = false;

  const workerOptions = {
    connection,
    prefix,
    concurrency,
    lockDuration,
    // Look for stalled jobs as often as a lock can expire, so a dead worker's jobs move on soon.
    stalledInterval: lockDuration,
    maxStalledCount: MAX_STALLED_COUNT,
  };

  const routeDelivery = async (job: Job<Delivery>) => {
    const routes = route(handlers, job.data);
    const names = routes.map((entry) => entry.handler.name);
    if (routes.length > 0) {
      await addHandlerRuns(handlerRuns, job.data, routes, {
        dedupeTtlSeconds,
        ...(options.retention ? { retention: options.retention } : {}),
      });
    }
    logger.info({ deliveryKey: job.data.key, handlers: names }, 'delivery routed');
    return { handlers: names };
  };

  const runHandler = async (job: Job<HandlerRunData>, token?: string) => {
    const { delivery, whereError } = job.data;
    const attempt = job.attemptsMade + 1;
    const log = logger.child({ deliveryKey: delivery.key, handler: job.name, attempt });
    const handler = byName.get(job.name);
    if (!handler) throw new UnrecoverableError(`no handler named "${job.name}" is loaded`);
    if (whereError !== undefined) {
      log.error({ outcome: 'failed', error: whereError }, 'handler run failed: where() threw');
      throw new UnrecoverableError(`where() threw: ${whereError}`);
    }
    // Started before without an outcome on record: a crash, or a completion Redis never got.
    const startedBefore = job.attemptsStarted > job.attemptsMade + 1;
    if (startedBefore && (await completions.has(job.id!))) {
      log.info(
        { outcome: 'completed' },
        'handler run had completed while Redis was away; not run again',
      );
      return null;
    }

    const controller = new AbortController();
    runsInFlight.add(controller);
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    const count = (outcome: string) => {
      const labels = { handler: job.name, outcome };
      options.metrics?.handlerRuns.inc(labels);
      options.metrics?.handlerRunDuration.observe(labels, (performance.now() - started) / 1000);
    };
    try {
      const result = await handler.handle({
        record: delivery.record,
        delivery: { key: delivery.key, event: delivery.event, receivedAt: delivery.receivedAt },
        api: api.withContext({ logger: log, signal: controller.signal }),
        logger: log,
        attempt,
        signal: controller.signal,
      });
      log.info({ outcome: 'completed', ms: ms() }, 'handler run');
      count('completed');
      completions.succeeded(job.id!);
      return result ?? null;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (shuttingDown && controller.signal.aborted) {
        log.warn({ outcome: 'interrupted', ms: ms() }, 'handler run interrupted by shutdown');
        count('interrupted');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      if (isApiRateLimitedError(error)) {
        // Not the handler's fault: try again once the limit allows, without spending an attempt.
        const delayMs = error.retryAfterMs + Math.floor(Math.random() * 1_000);
        log.info({ outcome: 'delayed', delayMs, source: error.source }, 'handler run rate limited');
        count('delayed');
        await job.moveToDelayed(Date.now() + delayMs, token);
        throw new DelayedError();
      }
      if (error instanceof UnrecoverableError || isFinalApiError(error)) {
        log.error({ outcome: 'failed', ms: ms(), error: message }, 'handler run failed for good');
        count('failed');
        throw error instanceof UnrecoverableError ? error : new UnrecoverableError(message);
      }
      const retries = attempt < (job.opts.attempts ?? 1);
      count(retries ? 'retrying' : 'failed');
      log.warn(
        { outcome: retries ? 'retrying' : 'failed', ms: ms(), error: message },
        retries ? 'handler run failed; will retry' : 'handler run failed; attempts used up',
      );
      throw error;
    } finally {
      runsInFlight.delete(controller);
    }
  };

  const deliveriesWorker = new Worker<Delivery>(DELIVERIES_QUEUE, routeDelivery, workerOptions);
  const handlersWorker = new Worker<HandlerRunData>(HANDLER_RUNS_QUEUE, runHandler, workerOptions);
  for (const worker of [deliveriesWorker, handlersWorker]) {
    worker.on('error', (error) => logger.warn({ error: error.message }, 'worker error'));
  }
  handlersWorker.on('completed', (job) => completions.confirmed(job.id!));
  await Promise.all([deliveriesWorker.waitUntilReady(), handlersWorker.waitUntilReady()]);
  logger.info({ handlers: handlers.map((handler) => handler.name), concurrency }, 'worker started');

  let closing: Promise<void> | undefined;
  const close = (timeoutMs = 30_000) => {
    closing ??= (async () => {
      shuttingDown = true;
      const graceful = Promise.all([deliveriesWorker.close(), handlersWorker.close()]);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      if ((await Promise.race([graceful, timedOut])) === 'timeout') {
        logger.warn({ running: runsInFlight.size }, 'shutdown timeout: aborting running handlers');
        for (const controller of runsInFlight) controller.abort(new Error('worker shutting down'));
        await graceful;
      }
      clearTimeout(timer);
      completions.close();
      await handlerRuns.close();
    })();
    return closing;
  };

  return { handlerRuns, close };
}
