/**
 * A run is one handler's work on one delivery. Its whole life is here; docs/runs.md draws it.
 *
 * 1. The routing job (a `deliveries` job) makes the first attempt of every run of its delivery:
 *    most runs complete at once and need no job of their own.
 * 2. A run whose first attempt did not complete goes on as a `handler-runs` job, in the state
 *    the attempt's decision says: delayed (retry or wait), waiting (interrupted), or failing at
 *    once into the dead letter.
 * 3. Each later attempt is that job's, decided the same way (run-policy.ts) and applied with
 *    BullMQ's own moves: return (completed), throw (retry, with our backoff), moveToDelayed
 *    (wait), UnrecoverableError (fail), moveToWait (interrupted).
 * 4. A run that completed is never run again: the routing job's return value and a marker (see
 *    completion-ledger.ts) say so to a job that starts again after a crash or a retry. (Only an
 *    operator runs it again on purpose: run-again.ts.)
 * 5. Each attempt leaves a record for the console: the first in the routing job's return value
 *    or in the data of the job it queued, each later one as a line of its job's logs.
 */
import {
  DelayedError,
  UnrecoverableError,
  WaitingError,
  type Job,
  type MinimalJob,
  type Queue,
} from 'bullmq';
import type { ApiClient } from '../api/client.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { findDelivery, type JobRetention } from '../queue/deliveries-queue.js';
import {
  addHandlerRun,
  handlerRunJobId,
  handlerRunQueued,
  logAttempt,
  startingAfresh,
  type AttemptRecord,
  type HandlerRunData,
} from '../queue/handler-runs-queue.js';
import { describeIssuesInline, readDelivery, type Delivery } from '../webhooks/delivery.js';
import type { CompletionLedger } from './completion-ledger.js';
import type { Handler } from './handler.js';
import { RunContext, type RunBindings } from './run-context.js';
import { decideRun, retryDelayMs, type AttemptResult, type RunDecision } from './run-policy.js';

/** What became of a handler's run of a delivery while routing it. */
export type RunSummary =
  | {
      readonly outcome: 'completed';
      readonly result: unknown;
      /** The attempt that completed it (absent from results of earlier versions). */
      readonly attempt?: AttemptRecord;
    }
  | { readonly outcome: 'queued' | 'done before' };

/** A routed delivery's job's return value. */
export interface RoutingResult {
  /** The handlers that wanted the delivery. */
  readonly handlers: readonly string[];
  readonly runs: Readonly<Record<string, RunSummary>>;
}

export interface RunsOptions {
  readonly handlers: readonly Handler[];
  readonly handlerRuns: Queue<HandlerRunData>;
  readonly completions: CompletionLedger;
  readonly api: ApiClient;
  readonly logger: Logger;
  /** How long a run's deduplication marker is kept; see DEDUPE_TTL_SECONDS. */
  readonly dedupeTtlSeconds: number;
  readonly retention?: JobRetention | undefined;
  readonly metrics?: Pick<Metrics, 'handlerRuns' | 'handlerRunDuration'> | undefined;
}

export interface Runs {
  /** The `deliveries` worker's processor. */
  route(job: Job<unknown>): Promise<RoutingResult>;
  /** The `handler-runs` worker's processor. */
  runQueued(job: Job<HandlerRunData>, token?: string): Promise<unknown>;
  /** The `handler-runs` worker's backoff strategy: the delay the retry decision chose. */
  backoff(attemptsMade: number, type?: string, error?: Error, job?: MinimalJob): number;
  /** From now on, an attempt whose signal fires is interrupted, not failed. */
  shutDown(): void;
  /** Fires the signal of every attempt in flight. Returns how many there were. */
  abortAll(reason: Error): number;
}

/** What an attempt came to, with what the handler threw, if it threw, and its record. */
interface Attempted {
  readonly decision: RunDecision;
  readonly error: unknown;
  readonly record: AttemptRecord;
}

/** The metric label and recorded outcome of each decision. */
const OUTCOME_LABEL: Record<RunDecision['kind'], AttemptRecord['outcome']> = {
  completed: 'completed',
  retry: 'retrying',
  wait: 'delayed',
  fail: 'failed',
  interrupted: 'interrupted',
};

export function createRuns(options: RunsOptions): Runs {
  const { handlers, handlerRuns, completions, api, logger } = options;
  const byName = new Map(handlers.map((handler) => [handler.name, handler]));
  const inFlight = new Set<RunContext>();
  /** The delay of each retry decided and not yet taken by BullMQ, by job id. */
  const retryDelays = new Map<string, number>();
  let shuttingDown = false;

  /** Asks the handler's `where`, then runs its `handle`: what came of it, or that it does not want the record. */
  const runHandler = async (
    handler: Handler,
    delivery: Delivery,
    bindings: RunBindings,
  ): Promise<AttemptResult | 'not wanted'> => {
    try {
      if (handler.where && !handler.where(delivery.record)) return 'not wanted';
    } catch (error) {
      return { ok: false, error: new UnrecoverableError(`where() threw: ${describe(error)}`) };
    }
    const run = new RunContext(delivery, bindings, { api, logger });
    inFlight.add(run);
    try {
      return { ok: true, result: await handler.handle(run) };
    } catch (error) {
      return { ok: false, error, interrupted: shuttingDown && RunContext.aborted(run) };
    } finally {
      inFlight.delete(run);
    }
  };

  /** One attempt, decided by the policy, with its log line and metrics. */
  const attempt = async (
    handler: Handler,
    delivery: Delivery,
    number: number,
  ): Promise<Attempted | 'not wanted'> => {
    const bindings = { deliveryKey: delivery.key, handler: handler.name, attempt: number };
    const startedAt = new Date().toISOString();
    const started = performance.now();
    const result = await runHandler(handler, delivery, bindings);
    if (result === 'not wanted') return result;
    const decision = decideRun(result, {
      attempt: number,
      attempts: handler.attempts,
      backoff: handler.backoff,
    });
    const ms = Math.round(performance.now() - started);
    report(logger, { ...bindings, ms }, decision);
    const outcome = OUTCOME_LABEL[decision.kind];
    const labels = { handler: handler.name, outcome };
    options.metrics?.handlerRuns.inc(labels);
    options.metrics?.handlerRunDuration.observe(labels, ms / 1000);
    const record: AttemptRecord = {
      attempt: number,
      of: handler.attempts,
      startedAt,
      ms,
      outcome,
      ...(result.ok ? {} : { error: describe(result.error) }),
    };
    return { decision, error: result.ok ? undefined : result.error, record };
  };

  const queueRun = (
    delivery: Delivery,
    handler: Handler,
    run: Omit<Parameters<typeof addHandlerRun>[1], 'delivery' | 'handler' | 'attempts'>,
  ) =>
    addHandlerRun(
      handlerRuns,
      { delivery, handler: handler.name, attempts: handler.attempts, ...run },
      {
        dedupeTtlSeconds: options.dedupeTtlSeconds,
        ...(options.retention ? { retention: options.retention } : {}),
      },
    );

  /** Whether a run's success is known, or a job of its own was queued (by an earlier routing). */
  const completedOrQueued = async (runId: string) => {
    const [completed, queued] = await Promise.all([
      completions.has(runId),
      handlerRunQueued(handlerRuns, runId),
    ]);
    return completed || queued;
  };

  /** Step 1 and 2: the first attempt, and what follows when it does not complete. */
  const firstAttempt = async (
    delivery: Delivery,
    handler: Handler,
    startedBefore: boolean,
  ): Promise<RunSummary | undefined> => {
    const runId = handlerRunJobId(delivery.key, handler.name);
    // A routing job that starts for the first time has nothing earlier to find in Redis, and
    // asks it nothing; only this process may hold a success a failover made Redis forget.
    const doneBefore = startedBefore ? await completedOrQueued(runId) : completions.holds(runId);
    if (doneBefore) {
      logger.info(
        { deliveryKey: delivery.key, handler: handler.name },
        'handler run completed or queued before; not run again',
      );
      return { outcome: 'done before' };
    }
    const attempted = await attempt(handler, delivery, 1);
    if (attempted === 'not wanted') return undefined;
    const { decision, record: firstAttempt } = attempted;
    switch (decision.kind) {
      case 'completed':
        completions.record(runId);
        return { outcome: 'completed', result: decision.result, attempt: firstAttempt };
      case 'retry':
        await queueRun(delivery, handler, {
          data: { firstAttempt, attemptsBefore: 1 },
          delayMs: decision.delayMs,
        });
        break;
      case 'wait':
        await queueRun(delivery, handler, { data: { firstAttempt }, delayMs: decision.delayMs });
        break;
      case 'fail':
        await queueRun(delivery, handler, { data: { firstAttempt, failedFor: decision.reason } });
        break;
      case 'interrupted':
        await queueRun(delivery, handler, { data: { firstAttempt } });
        break;
    }
    return { outcome: 'queued' };
  };

  const route = async (job: Job<unknown>): Promise<RoutingResult> => {
    const check = readDelivery(job.data);
    if (!check.ok) throw notADelivery(logger, job, check.issues);
    const { delivery } = check;
    const startedBefore = job.attemptsStarted > 1;
    const subscribed = handlers.filter((handler) => handler.events.includes(delivery.event));
    const summaries = await Promise.all(
      subscribed.map(async (handler) => {
        const summary = await firstAttempt(delivery, handler, startedBefore);
        return summary && ([handler.name, summary] as const);
      }),
    );
    const runs = Object.fromEntries(summaries.filter((entry) => entry !== undefined));
    const names = Object.keys(runs);
    // Each run logs its own line with the delivery's key; a delivery no handler took says so.
    logger[names.length === 0 ? 'info' : 'debug'](
      { deliveryKey: delivery.key, handlers: names },
      'delivery routed',
    );
    return { handlers: names, runs };
  };

  /** Step 3: a later attempt, as a `handler-runs` job. */
  const runQueued = async (job: Job<HandlerRunData>, token?: string): Promise<unknown> => {
    const check = readDelivery(job.data.delivery);
    if (!check.ok) throw notADelivery(logger, job, check.issues);
    const { delivery } = check;
    const { attemptsBefore = 0, failedFor } = job.data;
    // What a run that fails for good keeps, so that a retry from the dead letter starts afresh.
    const afresh = startingAfresh({ ...job.data, delivery });
    const handler = byName.get(job.name);
    if (!handler) throw new UnrecoverableError(`no handler named "${job.name}" is loaded`);
    if (failedFor !== undefined) {
      // Logged when the first attempt failed. Forgotten, so that a retry from the dead letter runs.
      await job.updateData(afresh);
      throw new UnrecoverableError(failedFor);
    }
    // Started before without an outcome on record: a crash, or a completion Redis never got.
    // A job that looks new may still be one whose completion a failover lost (as above).
    const startedBefore = job.attemptsStarted > job.attemptsMade + 1;
    if (startedBefore ? await completions.has(job.id!) : completions.holds(job.id!)) {
      logger.info(
        { deliveryKey: delivery.key, handler: handler.name, outcome: 'completed' },
        'handler run had completed while Redis was away; not run again',
      );
      return null;
    }

    const attempted = await attempt(handler, delivery, attemptsBefore + job.attemptsMade + 1);
    if (attempted === 'not wanted') return { skipped: 'where() no longer wants this record' };
    const { decision, error, record } = attempted;
    await logAttempt(job, record).catch((logError: Error) =>
      logger.warn(
        { deliveryKey: delivery.key, handler: handler.name, error: logError.message },
        'could not record the attempt for the console',
      ),
    );
    switch (decision.kind) {
      case 'completed':
        completions.succeeded(job.id!);
        return decision.result;
      case 'retry':
        retryDelays.set(job.id!, decision.delayMs);
        throw error instanceof Error ? error : new Error(decision.reason);
      case 'wait':
        await job.moveToDelayed(Date.now() + decision.delayMs, token);
        throw new DelayedError();
      case 'fail':
        // A retry from the dead letter starts afresh, with all of the handler's attempts.
        if (attemptsBefore > 0) await job.updateData(afresh);
        throw new UnrecoverableError(decision.reason);
      case 'interrupted':
        await job.moveToWait(token);
        throw new WaitingError();
    }
  };

  return {
    route,
    runQueued,
    backoff(attemptsMade, _type, _error, job) {
      const decided = job?.id === undefined ? undefined : retryDelays.get(job.id);
      if (decided !== undefined) {
        retryDelays.delete(job!.id!);
        return decided;
      }
      // Not a decided retry (the processor itself failed, say Redis refused a move): the
      // handler's own backoff, or a second if the handler is gone.
      const handler = job === undefined ? undefined : byName.get(job.name);
      return handler ? retryDelayMs(handler.backoff, attemptsMade) : 1_000;
    },
    shutDown() {
      shuttingDown = true;
    },
    abortAll(reason) {
      for (const run of inFlight) RunContext.abort(run, reason);
      return inFlight.size;
    },
  };
}

/**
 * The one log line of an attempt, at the level its decision deserves. A completed one is at
 * debug: at info, the receiver's `delivery queued` line already marks each delivery and the
 * console keeps every attempt, so the worker's info lines are the ones that need a look.
 */
function report(logger: Logger, fields: object, decision: RunDecision): void {
  switch (decision.kind) {
    case 'completed':
      return logger.debug({ ...fields, outcome: 'completed' }, 'handler run');
    case 'retry':
      return logger.warn(
        { ...fields, outcome: 'retrying', delayMs: decision.delayMs, error: decision.reason },
        'handler run failed; will retry',
      );
    case 'wait':
      return logger.info(
        { ...fields, outcome: 'delayed', delayMs: decision.delayMs, error: decision.reason },
        'handler run rate limited',
      );
    case 'fail':
      return logger.error(
        { ...fields, outcome: 'failed', error: decision.reason },
        'handler run failed for good',
      );
    case 'interrupted':
      return logger.warn(
        { ...fields, outcome: 'interrupted' },
        'handler run interrupted by shutdown',
      );
  }
}

/** A job whose data is not a delivery: it fails at once, and no handler sees it. */
function notADelivery(
  logger: Logger,
  job: Job,
  issues: Parameters<typeof describeIssuesInline>[0],
): UnrecoverableError {
  const reason = `not a delivery: ${describeIssuesInline(issues)}`;
  logger.error({ queue: job.queueName, jobId: job.id, issues }, 'job failed: not a delivery');
  return new UnrecoverableError(reason);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export type RunOutcome =
  | { readonly state: 'completed'; readonly result: unknown }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'pending' };

/** Where a handler's run of a delivery stands, read from the queues. */
export async function findRunOutcome(
  deliveries: Queue<Delivery>,
  handlerRuns: Queue<HandlerRunData>,
  deliveryKey: string,
  handlerName: string,
): Promise<RunOutcome> {
  const routing = await findDelivery(deliveries, deliveryKey);
  // The state first: a finished job is final, so what is read after it is complete.
  if (!routing || (await routing.getState()) !== 'completed') return { state: 'pending' };
  const { returnvalue } = (await deliveries.getJob(routing.id!)) ?? routing;
  const run = (returnvalue as RoutingResult | undefined)?.runs[handlerName];
  if (run?.outcome === 'completed') return { state: 'completed', result: run.result };

  const runId = handlerRunJobId(deliveryKey, handlerName);
  const state = await handlerRuns.getJobState(runId);
  if (state !== 'completed' && state !== 'failed') return { state: 'pending' };
  const job = await handlerRuns.getJob(runId);
  return state === 'completed'
    ? { state, result: job?.returnvalue }
    : { state, reason: job?.failedReason ?? '' };
}
