/**
 * The worker: consumes `deliveries`, makes the first attempt of each matching handler's run while
 * routing, and hands a run that did not succeed to the `handler-runs` queue, whose jobs it also
 * runs. Failure policy, in one place:
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
  handlerRunJobId,
  handlerRunQueuedKey,
  type HandlerRunData,
  type NewHandlerRun,
} from '../queue/handler-runs-queue.js';
import type { Delivery } from '../webhooks/delivery.js';
import type { Handler } from './handler.js';
import { createCompletionLedger } from './completion-ledger.js';
import { RunContext } from './run-context.js';
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

/** What one attempt of a handler came to. */
type AttemptOutcome =
  | { readonly kind: 'completed'; readonly result: unknown }
  | { readonly kind: 'interrupted' }
  | { readonly kind: 'delayed'; readonly delayMs: number }
  | { readonly kind: 'failed'; readonly error: unknown; readonly final: boolean };

/** What became of a handler's run of a delivery while routing it. */
export type RunSummary =
  | { readonly outcome: 'completed'; readonly result: unknown }
  | { readonly outcome: 'queued' | 'done before' };

/** A routed delivery's job's return value. */
export interface RoutingResult {
  readonly handlers: readonly string[];
  readonly runs: Readonly<Record<string, RunSummary>>;
}

/** How a first attempt that did not succeed goes on as a `handler-runs` job. */
function handOver(handler: Handler, outcome: Exclude<AttemptOutcome, { kind: 'completed' }>) {
  switch (outcome.kind) {
    case 'interrupted':
      return { handler };
    case 'delayed':
      return { handler, delayMs: outcome.delayMs };
    case 'failed': {
      if (outcome.final) {
        const failedFor =
          outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
        return { handler, attemptsBefore: 1, failedFor };
      }
      const { delayMs, jitter } = handler.backoff;
      return {
        handler,
        attemptsBefore: 1,
        delayMs: Math.round(delayMs * (1 - jitter * Math.random())),
      };
    }
  }
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
  const runsInFlight = new Set<RunContext>();
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

  const queueRuns = (delivery: Delivery, runs: readonly NewHandlerRun[]) =>
    addHandlerRuns(handlerRuns, delivery, runs, {
      dedupeTtlSeconds,
      ...(options.retention ? { retention: options.retention } : {}),
    });

  /** One attempt of a handler on a delivery, with its log line and metrics. */
  const attemptRun = async (
    handler: Handler,
    delivery: Delivery,
    attempt: number,
    attempts: number,
  ): Promise<AttemptOutcome> => {
    const bindings = { deliveryKey: delivery.key, handler: handler.name, attempt };
    const run = new RunContext(delivery, bindings, { api, logger });
    runsInFlight.add(run);
    // The run's own lines carry its bindings as its logger's would, without making one.
    const log = (fields: object) => ({ ...bindings, ...fields });
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    const count = (outcome: string) => {
      const labels = { handler: handler.name, outcome };
      options.metrics?.handlerRuns.inc(labels);
      options.metrics?.handlerRunDuration.observe(labels, (performance.now() - started) / 1000);
    };
    try {
      const result = await handler.handle(run);
      // Written out rather than through log(): this is the line of nearly every run.
      logger.info(
        {
          deliveryKey: delivery.key,
          handler: handler.name,
          attempt,
          outcome: 'completed',
          ms: ms(),
        },
        'handler run',
      );
      count('completed');
      return { kind: 'completed', result: result ?? null };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (shuttingDown && RunContext.aborted(run)) {
        logger.warn(
          log({ outcome: 'interrupted', ms: ms() }),
          'handler run interrupted by shutdown',
        );
        count('interrupted');
        return { kind: 'interrupted' };
      }
      if (isApiRateLimitedError(error)) {
        // Not the handler's fault: try again once the limit allows, without spending an attempt.
        const delayMs = error.retryAfterMs + Math.floor(Math.random() * 1_000);
        logger.info(
          log({ outcome: 'delayed', delayMs, source: error.source }),
          'handler run rate limited',
        );
        count('delayed');
        return { kind: 'delayed', delayMs };
      }
      if (error instanceof UnrecoverableError || isFinalApiError(error)) {
        logger.error(
          log({ outcome: 'failed', ms: ms(), error: message }),
          'handler run failed for good',
        );
        count('failed');
        const final = error instanceof UnrecoverableError ? error : new UnrecoverableError(message);
        return { kind: 'failed', error: final, final: true };
      }
      const retries = attempt < attempts;
      count(retries ? 'retrying' : 'failed');
      logger.warn(
        log({ outcome: retries ? 'retrying' : 'failed', ms: ms(), error: message }),
        retries ? 'handler run failed; will retry' : 'handler run failed; attempts used up',
      );
      return { kind: 'failed', error, final: !retries };
    } finally {
      runsInFlight.delete(run);
    }
  };

  /**
   * A run's first attempt, made by the routing job itself: most runs succeed at once, and then
   * need no job of their own, which halves the queue work per delivery. A run that does not
   * succeed is queued as a `handler-runs` job, which takes it from there (retries, the rate
   * limit's delay, the dead letter). A run that succeeded, or was queued, is never made again.
   *
   * What that costs the job in Redis: nothing beyond its own completion. Successes are written
   * as markers in batches, off the job's path (see completion-ledger), and only a job that
   * started before (after a crash, a completion Redis never got, or a retry) looks up what its
   * earlier start did: a job starting for the first time has no earlier start to find.
   */
  const runFirstAttempt = async (
    delivery: Delivery,
    handler: Handler,
    startedBefore: boolean,
  ): Promise<RunSummary> => {
    const runId = handlerRunJobId(delivery.key, handler.name);
    if (
      startedBefore &&
      (await completions.has(runId, [handlerRunQueuedKey(handlerRuns, runId)]))
    ) {
      logger.info(
        { deliveryKey: delivery.key, handler: handler.name },
        'handler run completed or queued before; not run again',
      );
      return { outcome: 'done before' };
    }
    const outcome = await attemptRun(handler, delivery, 1, handler.attempts);
    if (outcome.kind === 'completed') {
      completions.record(runId);
      return { outcome: 'completed', result: outcome.result };
    }
    await queueRuns(delivery, [handOver(handler, outcome)]);
    return { outcome: 'queued' };
  };

  const routeDelivery = async (job: Job<Delivery>): Promise<RoutingResult> => {
    const delivery = job.data;
    const routes = route(handlers, delivery);
    const broken = routes.filter((entry) => entry.whereError !== undefined);
    if (broken.length > 0) await queueRuns(delivery, broken);
    const startedBefore = job.attemptsStarted > 1;
    const summaries = await Promise.all(
      routes
        .filter((entry) => entry.whereError === undefined)
        .map(async ({ handler }) => [
          handler.name,
          await runFirstAttempt(delivery, handler, startedBefore),
        ]),
    );
    const runs: Record<string, RunSummary> = Object.fromEntries(summaries);
    for (const { handler } of broken) runs[handler.name] = { outcome: 'queued' };
    const names = routes.map((entry) => entry.handler.name);
    // Each run logs its own line with the delivery's key; a delivery no handler took says so.
    logger[names.length === 0 ? 'info' : 'debug'](
      { deliveryKey: delivery.key, handlers: names },
      'delivery routed',
    );
    return { handlers: names, runs };
  };

  const runHandler = async (job: Job<HandlerRunData>, token?: string) => {
    const { delivery, whereError, failedFor, attemptsBefore = 0 } = job.data;
    const attempt = attemptsBefore + job.attemptsMade + 1;
    const log = logger.child({ deliveryKey: delivery.key, handler: job.name, attempt });
    const handler = byName.get(job.name);
    if (!handler) throw new UnrecoverableError(`no handler named "${job.name}" is loaded`);
    if (whereError !== undefined) {
      log.error({ outcome: 'failed', error: whereError }, 'handler run failed: where() threw');
      throw new UnrecoverableError(`where() threw: ${whereError}`);
    }
    if (failedFor !== undefined) {
      // Logged when the attempt failed. Forgotten first, so that a retry from the dead letter runs.
      await job.updateData({ delivery, attemptsBefore });
      throw new UnrecoverableError(failedFor);
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

    const attempts = attemptsBefore + (job.opts.attempts ?? 1);
    const outcome = await attemptRun(handler, delivery, attempt, attempts);
    switch (outcome.kind) {
      case 'completed':
        completions.succeeded(job.id!);
        return outcome.result;
      case 'interrupted':
        await job.moveToWait(token);
        throw new WaitingError();
      case 'delayed':
        await job.moveToDelayed(Date.now() + outcome.delayMs, token);
        throw new DelayedError();
      case 'failed':
        throw outcome.error;
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
        for (const run of runsInFlight) RunContext.abort(run, new Error('worker shutting down'));
        await graceful;
      }
      clearTimeout(timer);
      await completions.close();
      await handlerRuns.close();
    })();
    return closing;
  };

  return { handlerRuns, close };
}
