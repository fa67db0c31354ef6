/**
 * Routing a delivery and making each attempt of its runs. docs/runs.md draws every exit.
 *
 * 1. Routing (a `deliveries` job) asks each handler of the event whether it wants the record,
 *    adds one job to each taking handler's queue (`runs-<handler>`), and completes. It runs no
 *    handler. The handlers of the event only other running workers have (the roster), or have
 *    with the event where this worker's lack it (a rolling deploy), get a run too: their `where()`
 *    is asked at the run's first attempt, by a worker whose handler lists the event.
 * 2. Every attempt of a run, the first included, is made by `run`, the processor of the workers
 *    of the handlers' queues. What an attempt's outcome means is decided by run-policy.ts and
 *    applied with BullMQ's own moves: return (completed), throw (retry, after the handler's
 *    backoff), BullMQ's manual rate limit (wait: the handler's whole queue waits, and the job
 *    goes back to waiting), UnrecoverableError (fail: the dead letter), moveToWait (interrupted
 *    by shutdown), moveToDelayed (a write of the executor's own that Redis refused: `orGiveBack`).
 *    A run's state is its job's.
 * 3. A run that completed is not run again: a job that was started before without an outcome
 *    asks the completion ledger first (completion-ledger.ts).
 */
import {
  DelayedError,
  RATE_LIMIT_ERROR,
  UnrecoverableError,
  WaitingError,
  Worker,
  type Job,
  type MinimalJob,
} from 'bullmq';
import type { Logger } from '../logger.js';
import { createOutageReporter } from '../queue/outage-reporter.js';
import {
  addRuns,
  lifeOf,
  logAttempt,
  runSuccessKey,
  type AttemptRecord,
  type HandlerRunData,
  type RoutingResult,
  type RunQueues,
} from '../runs/run-queues.js';
import { activeSpan, inSpan, type TraceSpan } from '../tracing/tracer.js';
import { describeIssuesInline, readDelivery, type Delivery } from '../webhooks/delivery.js';
import { projectOf } from '../webhooks/feedback-record.js';
import type { SimilarGrouping } from '../grouping/similar-grouping.js';
import type { HistoryWriter } from '../history/history-writer.js';
import type { RosterEntry } from '../runs/handler-roster.js';
import type { SimilarFacts } from '../similar/similar-facts.js';
import type { CompletionLedger } from './completion-ledger.js';
import type { Handler } from './handler.js';
import { limiterOf } from './handler-limiter.js';
import type { WorkerRuntimeOptions } from './runtime.js';
import {
  abandonedAttempts,
  isAttemptTimeout,
  settleWithin,
  type TimeoutWatch,
} from './attempt-timeout.js';
import { RunContext, type RunBindings } from './run-context.js';
import {
  decideRun,
  describe,
  retryDelayMs,
  type AttemptResult,
  type RunDecision,
} from './run-policy.js';

/** What the runtime (runtime.ts) gives the routing and the runs of its workers. */
export type RunsOptions = Pick<
  WorkerRuntimeOptions,
  'connection' | 'handlers' | 'api' | 'logger' | 'dedupeTtlSeconds' | 'retention' | 'metrics'
> & {
  /** The handlers' queues: routing adds runs to them, and a rate limit stops one of them. */
  readonly runQueues: Pick<RunQueues, 'of'>;
  readonly completions: CompletionLedger;
  /** Where routings and completed runs are written for the console (failures: runtime.ts). */
  readonly history: HistoryWriter;
  /** Groups each routed delivery with similar ones; undefined when SIMILAR=off. */
  readonly similar: SimilarGrouping | undefined;
  /** The handlers of the running workers, this one's included (the roster). */
  readonly roster: RunningHandlers;
  /**
   * With SIMILAR on: the facts a run sees when it starts, given those it was added with (its
   * routing's): the same, with its group's first as it is now (similar-groups.ts `whenRunning`).
   * Every attempt asks, the first too: an operator may have taken the group's first out while
   * the run waited in its queue (a rate limit, a paused queue, a backlog) or since it last ran.
   */
  readonly similarWhenRunning:
    | ((deliveryKey: string, project: string, routed: SimilarFacts) => Promise<SimilarFacts>)
    | undefined;
};

/**
 * The running workers' handlers, one entry per name with the events of any worker's (so a rolling
 * deploy that adds an event to a handler counts the event as soon as one worker's handler has it).
 */
export interface RunningHandlers {
  /** As last read; the runtime reads them every `everyMs`. */
  running(): readonly RosterEntry[];
  /** Reads them now. */
  read(): Promise<readonly RosterEntry[]>;
  readonly everyMs: number;
}

export interface Runs {
  /** The `deliveries` worker's processor. */
  route(job: Job<unknown>, token?: string): Promise<RoutingResult>;
  /** The processor of the handlers' queues: one attempt of a run. */
  run(job: Job<HandlerRunData>, token?: string): Promise<unknown>;
  /** The backoff strategy of the handlers' workers: the delay the retry decision chose. */
  backoff(attemptsMade: number, type?: string, error?: Error, job?: MinimalJob): number;
  /**
   * At shutdown: fires each attempt's signal (it is interrupted, not failed), and interrupts each
   * attempt that starts later before its handler runs. Returns how many were running.
   */
  abortAll(reason: Error): number;
  /** The ids of the runs whose attempt is in flight. */
  inFlight(): string[];
}

/** Each decision's outcome (the metric label and the attempt record's) and its log line. */
const REPORTED: Record<
  RunDecision['kind'],
  { outcome: AttemptRecord['outcome']; level: 'debug' | 'info' | 'warn' | 'error'; message: string }
> = {
  completed: { outcome: 'completed', level: 'debug', message: 'handler run' },
  retry: { outcome: 'retrying', level: 'warn', message: 'handler run failed; will retry' },
  wait: { outcome: 'delayed', level: 'info', message: 'handler run rate limited' },
  fail: { outcome: 'failed', level: 'error', message: 'handler run failed for good' },
  interrupted: {
    outcome: 'interrupted',
    level: 'warn',
    message: 'handler run interrupted by shutdown',
  },
};

/**
 * How long a run left to a worker whose handler lists its event waits before a worker takes it
 * again (any worker of the handler may): with n workers that lack the event for each that has
 * it, it waits about n s, and each such worker takes it once a second at most. Shorter when the
 * roster is read more often (tests).
 */
const LEFT_FOR_MS = 1_000;

/** How long a job whose step Redis refused waits before it is taken again (`orGiveBack`). */
const GIVE_BACK_MS = 2_000;

export function createRuns(options: RunsOptions): Runs {
  const { handlers, runQueues, completions, history, api, logger } = options;
  const byName = new Map(handlers.map((handler) => [handler.name, handler]));
  const inFlight = new Map<RunContext, string>();
  const abandoned = abandonedAttempts();
  // The shutdown's abort, once fired: an attempt that starts after it (its job was handed over
  // before the workers stopped taking jobs) goes back to waiting before its handler runs.
  let shutdown: Error | undefined;
  const outage = createOutageReporter(options.connection, logger, 'routing and handler runs', {
    meanwhile: 'each job whose step it refuses gives its attempt back',
    endsWhenReady: false,
  });

  /**
   * Runs one of the executor's own writes (not the handler's). Thrown as it is, an error of a
   * Redis that refuses writes for a while (out of memory, a replica mid-failover, loading, busy)
   * would be the attempt's failure: an attempt spent, the dead letter on the last, though the
   * handler never failed. Instead the attempt is given back: the job waits `delayMs` with
   * `moveToDelayed`, which spends no attempt, and which survives out of memory (its script's first
   * write, the lock's DEL, frees memory, and Redis refuses no write of a script that has written).
   * If Redis refuses the move too (a replica, loading, busy), the job stays active, and BullMQ's stall check puts
   * it back once Redis takes writes, as for every job in flight in an outage: a stall, no attempt.
   */
  const orGiveBack = async <T>(
    job: Job,
    token: string | undefined,
    write: () => Promise<T>,
    delayMs = GIVE_BACK_MS,
  ): Promise<T> => {
    try {
      return await write();
    } catch (error) {
      if (outage(error) === error) throw error;
      await job.moveToDelayed(Date.now() + delayMs, token).catch(() => undefined);
      throw new DelayedError();
    }
  };

  const route = async (job: Job<unknown>, token?: string): Promise<RoutingResult> => {
    const check = readDelivery(job.data);
    if (!check.ok) throw notADelivery(logger, job, check.issues);
    const { delivery } = check;
    const own = handlers.filter((handler) => handler.events.includes(delivery.event));
    const taking = [
      ...own.filter((handler) => wants(handler, delivery)),
      // Those of the event that only other workers have, or whose events here lack it (another
      // release's): their `where()` is asked at the run's first attempt, by a worker that has them.
      ...options.roster
        .running()
        .filter(
          (entry) =>
            entry.events?.includes(delivery.event) && !own.some(({ name }) => name === entry.name),
        ),
    ];
    // Before the runs are added, so that each carries its facts. A routing that runs again (its
    // writes refused, or failed) is grouped once, and adds only the runs that are missing.
    const grouper = options.similar;
    const grouping = grouper && performance.now();
    const similar = grouper && (await orGiveBack(job, token, () => grouper.group(delivery)));
    if (grouping) options.metrics?.similarDuration.observe((performance.now() - grouping) / 1000);
    const runs = taking.map(({ name, attempts }) => ({ handler: name, attempts }));
    const retention = { dedupeTtlSeconds: options.dedupeTtlSeconds, retention: options.retention };
    await orGiveBack(job, token, () =>
      addRuns(runQueues, { deliveryJobId: job.id!, delivery, similar }, runs, retention),
    );
    const names = taking.map(({ name }) => name);
    history.routed(delivery, job.id!, names);
    activeSpan().setAttributes({
      'feedback.delivery.key': delivery.key,
      'feedback.handlers': names.join(','),
    });
    // Each run logs its own line with the delivery's key; a delivery no handler took says so.
    const level = names.length === 0 ? 'info' : 'debug';
    if (logger.isLevelEnabled(level)) {
      logger[level]({ deliveryKey: delivery.key, handlers: names }, 'delivery routed');
    }
    return { handlers: names };
  };

  const run = async (job: Job<HandlerRunData>, token?: string): Promise<unknown> => {
    const check = readDelivery(job.data.delivery);
    if (!check.ok) throw notADelivery(logger, job, check.issues);
    const { delivery } = check;
    const handler = byName.get(job.name);
    // Each handler's queue holds its runs only; a job named otherwise was added by hand.
    if (!handler) throw toDeadLetter(`no handler named "${job.name}" takes this queue's runs`);
    // Its event is not one this worker's handler was written for, but another running worker's
    // handler of the name lists it (a rolling deploy): left to that one, no attempt spent. Once
    // none does, the run is skipped (`attempt`); a fresh read first, as the last may predate it.
    if (!handler.events.includes(delivery.event)) {
      const listed = (entries: readonly RosterEntry[]) =>
        entries.some(
          ({ name, events }) => name === handler.name && events?.includes(delivery.event),
        );
      if (listed(options.roster.running()) || listed(await options.roster.read())) {
        logger.debug(
          { deliveryKey: delivery.key, handler: handler.name, event: delivery.event },
          'handler run left to a worker whose handler takes its event',
        );
        await job.moveToDelayed(Date.now() + Math.min(options.roster.everyMs, LEFT_FOR_MS), token);
        throw new DelayedError();
      }
    }
    // Started before without an outcome: a crash, or a completion Redis never got (or a start
    // that gave its attempt back: rate limited, interrupted, left: one read more). A job that
    // looks new may still be one whose completion a failover lost (see completion-ledger.ts).
    const startedBefore = job.attemptsStarted > job.attemptsMade + 1;
    const successKey = runSuccessKey(handler.name, delivery.key, lifeOf(job));
    const askRedis = startedBefore || completions.marksEverySuccess;
    const receivedAt = Date.parse(delivery.receivedAt);
    const done = completions[askRedis ? 'has' : 'holds'](successKey, receivedAt);
    if (await done) {
      logger.info(
        { deliveryKey: delivery.key, handler: handler.name, outcome: 'completed' },
        'handler run had completed before; not run again',
      );
      // Else the history, which lost or never got the first completion's line (a crash before it
      // was written, a failover), shows the run under way for as long as it keeps the delivery.
      history.completedBefore(delivery, handler.name);
      return null;
    }

    const routed = job.data.similar;
    const similar =
      routed && options.similarWhenRunning
        ? await options.similarWhenRunning(delivery.key, projectOf(delivery.record), routed)
        : routed;
    // Shut down before its handler ran (its job was handed over as the workers stopped): not
    // an attempt, so no attempt record; it runs again elsewhere, no attempt spent.
    if (shutdown) {
      await job.moveToWait(token);
      throw new WaitingError();
    }

    const bindings = {
      deliveryKey: delivery.key,
      handler: handler.name,
      attempt: job.attemptsMade + 1,
    };
    const startedAtMs = Date.now();
    const started = performance.now();
    const { result, decision } = await inSpan(
      `handler ${handler.name}`,
      {
        attributes: {
          'feedback.handler': handler.name,
          'feedback.run.id': job.id,
          'feedback.run.attempt': bindings.attempt,
          'feedback.delivery.key': delivery.key,
        },
      },
      async (span) => {
        const result = await attempt(handler, delivery, bindings, job.id!, similar);
        const decision = decideRun(result, {
          attempt: bindings.attempt,
          attempts: job.opts.attempts ?? handler.attempts,
          backoff: handler.backoff,
        });
        traceDecision(span, result, decision);
        return { result, decision };
      },
    );
    const ms = Math.round(performance.now() - started);
    report(logger, bindings, ms, decision);
    const outcome = REPORTED[decision.kind].outcome;
    options.metrics?.handlerRuns.inc({ handler: handler.name, outcome });
    options.metrics?.handlerRunDuration.observe({ handler: handler.name, outcome }, ms / 1000);
    if (decision.kind !== 'completed') {
      // The attempt that completes a run is the job's completion; every other one is a log line.
      const record: AttemptRecord = {
        attempt: bindings.attempt,
        of: job.opts.attempts ?? handler.attempts,
        startedAt: new Date(startedAtMs).toISOString(),
        ms,
        outcome,
        ...(result.ok ? {} : { error: describe(result.error) }),
      };
      await logAttempt(job, record).catch((error: Error) =>
        logger.warn(
          { deliveryKey: delivery.key, handler: handler.name, error: error.message },
          'could not record the attempt for the console',
        ),
      );
    }
    switch (decision.kind) {
      case 'completed': {
        const result = storable(decision.result, logger, bindings);
        // A run started afresh has a life of its own (restart.ts), which no later delivery's
        // run shares: its success is remembered from now, as its job may still come back (a
        // failover that lost the completion) after its delivery is no longer remembered.
        const rememberedFrom = lifeOf(job) > 0 ? Date.now() : Date.parse(delivery.receivedAt);
        completions.succeeded(successKey, job.id!, rememberedFrom);
        history.finished(delivery, handler.name, {
          state: 'completed',
          at: new Date().toISOString(),
          result,
        });
        return result;
      }
      case 'retry':
        throw new HandlerAttemptError(decision, result.ok ? undefined : result.error);
      case 'wait': {
        // The limit is the handler's (the API's, shared by its runs): its whole queue waits, and
        // this job goes back to waiting without spending an attempt. Nothing bounces meanwhile.
        // BullMQ keeps one limiter key per queue, which `rateLimit` replaces, count and all: never
        // with a shorter wait than a hold in force (another run's longer 429, or the handler's own
        // rateLimit window once used up), which would let runs start before it ends. A window
        // with room left is not a hold: waiting it out could stop the queue for a day.
        const queue = runQueues.of(handler.name);
        // Refused, the run waits the limit out by itself.
        const limit = async () => {
          const held = await queue.getRateLimitTtl(limiterOf(handler).max);
          await queue.rateLimit(Math.max(decision.delayMs, held));
        };
        await orGiveBack(job, token, limit, decision.delayMs);
        throw Worker.RateLimitError();
      }
      case 'fail':
        throw new UnrecoverableError(notASignal(decision.reason));
      case 'interrupted':
        await job.moveToWait(token);
        throw new WaitingError();
    }
  };

  /** Asks `where` again (the record may no longer be wanted), then runs `handle`. */
  const attempt = async (
    handler: Handler,
    delivery: Delivery,
    bindings: RunBindings,
    runId: string,
    similar: SimilarFacts | undefined,
  ): Promise<AttemptResult> => {
    // No running worker's handler of the name takes the event any more (run above).
    if (!handler.events.includes(delivery.event)) {
      return { ok: true, result: { skipped: `its events do not include ${delivery.event}` } };
    }
    try {
      if (handler.where && !handler.where(delivery.record)) {
        return { ok: true, result: { skipped: 'where() does not want this record' } };
      }
    } catch (error) {
      return { ok: false, error: new UnrecoverableError(`where() threw: ${describe(error)}`) };
    }
    const context = new RunContext(delivery, bindings, { api, logger }, similar);
    inFlight.set(context, runId);
    try {
      const pending = handler.handle(context);
      // A handler that returned at once needs no timer (a synchronous one, or one with nothing
      // to do): a timer per attempt is most of what a timeout costs.
      if (!isThenable(pending)) return { ok: true, result: pending };
      return { ok: true, result: await settleWithin(pending, timeoutWatch(handler, context)) };
    } catch (error) {
      // The first abort holds: a timeout is the attempt's failure; a shutdown's, an interruption.
      const abortedFor = RunContext.abortedFor(context);
      if (isAttemptTimeout(abortedFor)) return { ok: false, error: abortedFor };
      return { ok: false, error, interrupted: abortedFor !== undefined };
    } finally {
      inFlight.delete(context);
    }
  };

  const timeoutWatch = (handler: Handler, context: RunContext): TimeoutWatch => ({
    handler: handler.name,
    timeoutMs: handler.timeoutMs,
    abort: (reason) => RunContext.abort(context, reason),
    abandon: (pending) => {
      const left = abandoned.leave(pending);
      context.logger.warn(
        { timeoutMs: handler.timeoutMs, abandoned: abandoned.running },
        left
          ? 'handler ignored its signal at the timeout and may still be running; the worker no longer waits for it'
          : 'handler ignored its signal at the timeout; too many attempts are left running, so the worker keeps its slot until it settles',
      );
      return left;
    },
  });

  return {
    route,
    run,
    backoff(attemptsMade, _type, error, job) {
      // BullMQ passes the error the processor threw: a decided retry carries its delay.
      if (error instanceof HandlerAttemptError) return error.delayMs;
      // Not a decided retry (the processor itself failed, say Redis refused a move): the
      // handler's own backoff, or a second if the handler is gone.
      const handler = job === undefined ? undefined : byName.get(job.name);
      return handler ? retryDelayMs(handler.backoff, attemptsMade) : 1_000;
    },
    abortAll(reason) {
      shutdown ??= reason;
      for (const context of inFlight.keys()) RunContext.abort(context, reason);
      return inFlight.size;
    },
    inFlight: () => [...inFlight.values()],
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * Whether routing adds a run for this handler: its `where` holds, or threw. A `where` that throws
 * gets a run all the same, whose first attempt fails it with the error, so that the delivery
 * waits in the dead letter for the handler to be fixed instead of being dropped.
 */
function wants(handler: Handler, delivery: Delivery): boolean {
  try {
    return handler.where === undefined || handler.where(delivery.record);
  } catch {
    return true;
  }
}

/**
 * A handler's result as the history and BullMQ keep it, as JSON. One JSON cannot hold (a cycle, as
 * in an HTTP client's response, or a BigInt) is kept as null: else the run, done, would fail
 * after it, and its delivery would show as running in the history for as long as it is kept.
 */
function storable(result: unknown, logger: Logger, fields: RunBindings): unknown {
  try {
    JSON.stringify(result);
    return result;
  } catch (error) {
    logger.warn(
      { ...fields, error: describe(error) },
      "handler's result cannot be kept as JSON; kept as null",
    );
    return null;
  }
}

/**
 * What came of an attempt, on its span: the outcome, the error, a rate limit's wait (the run is
 * delayed until it ends, no attempt spent), the dead letter.
 */
function traceDecision(span: TraceSpan, result: AttemptResult, decision: RunDecision): void {
  span.setAttributes({ 'feedback.run.outcome': REPORTED[decision.kind].outcome });
  if (!result.ok) span.fail(result.error);
  if (decision.kind === 'wait') {
    span.addEvent('rate limit wait', { 'feedback.wait_ms': decision.delayMs });
  }
  if (decision.kind === 'fail') {
    span.addEvent('moved to the dead letter', { 'feedback.run.reason': decision.reason });
  }
}

/**
 * The one log line of an attempt, at the level its decision deserves. A completed one is at
 * debug: at info, the receiver's `delivery queued` line already marks each delivery and the
 * console keeps every attempt, so the worker's info lines are the ones that need a look.
 */
function report(logger: Logger, bindings: RunBindings, ms: number, decision: RunDecision): void {
  const { outcome, level, message } = REPORTED[decision.kind];
  // A completed run's line is at debug: off in production, where its fields need not be made.
  if (!logger.isLevelEnabled(level)) return;
  // Field by field, not a spread of the bindings: on Node 20, fields added after a leading
  // spread cost ~1.5 µs a line, every run's.
  logger[level](
    {
      deliveryKey: bindings.deliveryKey,
      handler: bindings.handler,
      attempt: bindings.attempt,
      ms,
      outcome,
      ...('delayMs' in decision ? { delayMs: decision.delayMs } : {}),
      ...('reason' in decision ? { error: decision.reason } : {}),
    },
    message,
  );
}

/** A job whose data is not a delivery: it fails at once, and no handler sees it. */
function notADelivery(
  logger: Logger,
  job: Job,
  issues: Parameters<typeof describeIssuesInline>[0],
): UnrecoverableError {
  const reason = `not a delivery: ${describeIssuesInline(issues)}`;
  logger.error({ queue: job.queueName, jobId: job.id, issues }, 'job failed: not a delivery');
  return toDeadLetter(reason);
}

/** The error that fails a job for good, said on its span too. */
function toDeadLetter(reason: string): UnrecoverableError {
  activeSpan().addEvent('moved to the dead letter', { 'feedback.run.reason': reason });
  return new UnrecoverableError(reason);
}

/**
 * A failed attempt, as BullMQ is told of it: the handler's own error is its cause, never thrown
 * as it is, so that an error of the handler's that BullMQ would read as one of its control
 * signals (named DelayedError or WaitingError, or with the rate limit's message) is a failure.
 */
export class HandlerAttemptError extends Error {
  override readonly name = 'HandlerAttemptError';
  /** The wait before the next attempt, as the retry decision chose it (see `backoff`). */
  readonly delayMs: number;

  constructor({ reason, delayMs }: { reason: string; delayMs: number }, cause: unknown) {
    super(notASignal(reason), cause === undefined ? undefined : { cause });
    this.delayMs = delayMs;
  }
}

/** BullMQ reads a failure with its rate limit's message as the manual rate limit's signal. */
function notASignal(reason: string): string {
  return reason === RATE_LIMIT_ERROR ? `the handler threw: ${reason}` : reason;
}
