/**
 * The handler API: what a user writes to act on deliveries. A handler names itself, says which
 * deliveries it wants, and handles one at a time; the worker runs each handler's share of a
 * delivery as its own job, so it is retried on its own and never re-run once it succeeded.
 */
import type { FeedbackApi } from '../api/client.js';
import type { Logger } from '../logger.js';
import { ROUTING } from '../history/delivery-history.js';
import { HANDLER_NAME } from '../runs/run-queues.js';
import { FEEDBACK_CREATED } from '../webhooks/delivery.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';
import type { SimilarFacts, SimilarWindow } from '../similar/similar-facts.js';
import {
  isSimilarWindow,
  isSpan,
  isWholeAtLeastOne,
  MAX_SPAN_MS,
} from '../similar/similar-window.js';

export interface DeliveryInfo {
  /** Identifies the delivery across retries; the same for every handler of it. */
  readonly key: string;
  readonly event: string;
  /** When the receiver accepted it, ISO 8601 UTC. */
  readonly receivedAt: string;
}

/**
 * What a handler's `handle` is given. `api`, `logger` and `signal` are made when first read, so a
 * run pays only for what it uses: read them from the context or destructure it, as the examples
 * do; a spread copy (`{ ...context }`) leaves them out.
 */
export interface HandlerContext {
  /** The feedback record the delivery carries, validated. */
  readonly record: FeedbackRecord;
  readonly delivery: DeliveryInfo;
  /** The feedback API, within the shared rate limit, logging through `logger`. */
  readonly api: FeedbackApi;
  /** Carries the delivery key and the handler's name on every line. */
  readonly logger: Logger;
  /** 1 on the first run, 2 on the first retry, and so on. */
  readonly attempt: number;
  /**
   * Fires at the handler's `timeoutMs` (reason: a `TimeoutError` DOMException naming the handler
   * and the ms; the attempt fails and is retried), or when the worker shuts down and can wait no
   * longer (the run then happens again later, no attempt spent). Pass it to `fetch` and the like:
   * at the timeout the worker stops waiting for the attempt whether or not the handler stops.
   */
  readonly signal: AbortSignal;
  /** The delivery's group and best matches (docs/similar.md); undefined when SIMILAR=off. */
  readonly similar?: SimilarFacts | undefined;
}

export interface HandlerBackoff {
  /** Default: exponential. */
  readonly type?: 'exponential' | 'fixed';
  /**
   * The first retry's delay, from 0 to 30 days; exponential doubles it each time, up to 30 days.
   * Default: 1 000.
   */
  readonly delayMs?: number;
  /** Share of the delay drawn at random, 0 to 1, so retries of many runs spread out. Default: 0.5. */
  readonly jitter?: number;
}

/** BullMQ's limiter on the handler's queue, kept in Redis: every worker of the handler shares it. */
export interface HandlerRateLimit {
  /** Runs that start in a window, whole, at least 1. */
  readonly max: number;
  /** The window, in ms, from the first run it lets start; whole, at least 1. */
  readonly durationMs: number;
}

export interface HandlerDefinition {
  /** Unique among the worker's handlers; letters, digits, `-`, `_` and `.`. */
  readonly name: string;
  /** Events it handles. Default: `['feedback.created']`. */
  readonly events?: readonly string[];
  /** Handles only the records for which this returns true. Default: every record. */
  readonly where?: (record: FeedbackRecord) => boolean;
  /** Runs before the run goes to the dead letter. Default: 8. */
  readonly attempts?: number;
  readonly backoff?: HandlerBackoff;
  /**
   * Group-size windows whose crossing the handler acts on: the delivery whose arrival makes a
   * window true sees it in `similar.crossed`, once per crossing, whichever worker routes it
   * (workers tell each other their handlers' windows: docs/similar.md). Default: none.
   */
  readonly similarWindows?: readonly SimilarWindow[];
  /**
   * At most `max` runs start in `durationMs`, across every worker (BullMQ's limiter; a window
   * opens at the first run it lets start). Default: no limit of its own; the feedback API's
   * 429 and `FEEDBACK_API_RATE_LIMIT` still pause the handler's queue.
   */
  readonly rateLimit?: HandlerRateLimit;
  /**
   * How long one attempt may take, in ms; whole, from 1 to MAX_TIMEOUT_MS (about 24.8 days). At
   * the timeout the context's `signal` fires, the worker stops waiting, and the attempt fails
   * ("timed out after N ms"), retried with the backoff like any other failure. Default: 300 000
   * (5 minutes, the time Node's `fetch` itself waits for an answer's headers).
   */
  readonly timeoutMs?: number;
  /** Does the work. What it returns is kept with the finished job. Throw to retry. */
  handle(context: HandlerContext): unknown;
}

const HANDLER = Symbol.for('feedback-receiver.Handler');

export interface Handler {
  readonly [HANDLER]: true;
  readonly name: string;
  readonly events: readonly string[];
  readonly where: ((record: FeedbackRecord) => boolean) | undefined;
  readonly attempts: number;
  readonly backoff: Required<HandlerBackoff>;
  readonly similarWindows: readonly SimilarWindow[];
  readonly rateLimit: HandlerRateLimit | undefined;
  readonly timeoutMs: number;
  readonly handle: (context: HandlerContext) => unknown;
}

export const DEFAULT_ATTEMPTS = 8;
/**
 * An attempt's timeout when the handler sets none: 5 minutes. Long enough for a handler that
 * waits out the API's rate limit or a slow service, short enough that a hung one frees its slot
 * and shows as failing the same hour; Node's `fetch` (undici) gives up on an answer's headers
 * after the same 5 minutes, so a handler that relies on it times out about when it would.
 */
export const DEFAULT_TIMEOUT_MS = 300_000;
/** setTimeout's longest delay: a longer one would fire at once (Node warns, and uses 1 ms). */
export const MAX_TIMEOUT_MS = 2_147_483_647;
export const DEFAULT_BACKOFF: Required<HandlerBackoff> = {
  type: 'exponential',
  delayMs: 1_000,
  jitter: 0.5,
};

/**
 * Declares a handler.
 *
 * @throws {TypeError} when the definition is not usable (bad name, attempts, events, rateLimit,
 *   timeoutMs or handle).
 * @example
 * export default defineHandler({
 *   name: 'log-low-ratings',
 *   where: (record) => (record.rating ?? 5) <= 2,
 *   async handle({ record, logger }) {
 *     logger.info({ rating: record.rating }, 'low rating');
 *   },
 * });
 */
export function defineHandler(definition: HandlerDefinition): Handler {
  const { name, events = [FEEDBACK_CREATED], where, attempts = DEFAULT_ATTEMPTS } = definition;
  if (typeof name !== 'string' || !HANDLER_NAME.test(name)) {
    throw new TypeError(
      `Handler name ${JSON.stringify(name)} is not usable: use 1 to 64 letters, digits, "-", "_" or "."`,
    );
  }
  if (name === ROUTING) {
    throw new TypeError(
      `Handler name "${ROUTING}" is taken: it names a delivery's routing in the console`,
    );
  }
  if (typeof definition.handle !== 'function') {
    throw new TypeError(`Handler "${name}" has no handle function`);
  }
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new TypeError(`Handler "${name}": attempts must be a whole number of at least 1`);
  }
  if (
    !Array.isArray(events) ||
    events.length === 0 ||
    !events.every((e) => typeof e === 'string')
  ) {
    throw new TypeError(`Handler "${name}": events must be a non-empty list of event names`);
  }
  if (where !== undefined && typeof where !== 'function') {
    throw new TypeError(`Handler "${name}": where must be a function of the record`);
  }
  const similarWindows = definition.similarWindows ?? [];
  if (!Array.isArray(similarWindows) || !similarWindows.every(isSimilarWindow)) {
    throw new TypeError(
      `Handler "${name}": similarWindows must be a list of { atLeast, withinMs }, whole numbers of at least 1, withinMs at most 30 days (${MAX_SPAN_MS})`,
    );
  }
  const { rateLimit } = definition;
  if (
    rateLimit !== undefined &&
    !(isWholeAtLeastOne(rateLimit?.max) && isSpan(rateLimit.durationMs))
  ) {
    throw new TypeError(
      `Handler "${name}": rateLimit must be { max, durationMs }, whole numbers of at least 1, durationMs at most 30 days (for 100 runs a minute: { max: 100, durationMs: 60_000 })`,
    );
  }
  const { timeoutMs = DEFAULT_TIMEOUT_MS } = definition;
  if (!isWholeAtLeastOne(timeoutMs) || timeoutMs > MAX_TIMEOUT_MS) {
    throw new TypeError(
      `Handler "${name}": timeoutMs must be a whole number of ms from 1 to ${MAX_TIMEOUT_MS} (for 2 minutes: 120_000)`,
    );
  }
  const backoff = { ...DEFAULT_BACKOFF, ...definition.backoff };
  // Infinity (or a delay of centuries) put the run's retry off for good: neither retried nor
  // in the dead letter, shown retrying until its history expired.
  if (
    !(backoff.delayMs >= 0 && backoff.delayMs <= MAX_SPAN_MS) ||
    !(backoff.jitter >= 0 && backoff.jitter <= 1)
  ) {
    throw new TypeError(
      `Handler "${name}": backoff needs delayMs from 0 to 30 days (${MAX_SPAN_MS}) and jitter from 0 to 1`,
    );
  }
  return Object.freeze({
    [HANDLER]: true as const,
    name,
    events: Object.freeze([...events]),
    where: where,
    attempts,
    backoff: Object.freeze(backoff),
    similarWindows: Object.freeze(similarWindows.map((w) => Object.freeze({ ...w }))),
    rateLimit: rateLimit && Object.freeze({ max: rateLimit.max, durationMs: rateLimit.durationMs }),
    timeoutMs,
    handle: definition.handle.bind(definition),
  });
}

/** True for what defineHandler returns, even from another copy of this package. */
export function isHandler(value: unknown): value is Handler {
  return value !== null && typeof value === 'object' && HANDLER in value;
}
