/**
 * What one attempt of a run comes to: the "When a run fails" table of docs/handlers.md as one
 * pure function.
 * The worker applies the decision (see runs.ts); docs/runs.md draws where each one leads.
 */
import { UnrecoverableError } from 'bullmq';
import { isApiRateLimitedError, isFinalApiError } from '../api/api-errors.js';
import { cutText } from '../cut-text.js';
import { MAX_SPAN_MS } from '../similar/similar-window.js';
import type { HandlerBackoff } from './handler.js';

export type RunDecision =
  /** The handler returned: the run is done, with what it returned. */
  | { readonly kind: 'completed'; readonly result: unknown }
  /** A failure worth another attempt, after the handler's backoff. */
  | { readonly kind: 'retry'; readonly delayMs: number; readonly reason: string }
  /** A rate limit: try again once it allows, without spending an attempt. */
  | { readonly kind: 'wait'; readonly delayMs: number; readonly reason: string }
  /** Retrying cannot fix it, or the attempts are used up: into the dead letter. */
  | { readonly kind: 'fail'; readonly reason: string }
  /** Cut short by the worker's shutdown: runs again, without spending an attempt. */
  | { readonly kind: 'interrupted' };

export type AttemptResult =
  | { readonly ok: true; readonly result: unknown }
  | {
      readonly ok: false;
      readonly error: unknown;
      /** The worker aborted the attempt because it is shutting down. */
      readonly interrupted?: boolean;
    };

export interface AttemptFacts {
  /** This attempt's number: 1 for the first. */
  readonly attempt: number;
  /** How many attempts the handler allows. */
  readonly attempts: number;
  readonly backoff: Required<HandlerBackoff>;
  /** A number in [0, 1) for jitter; Math.random by default. */
  readonly random?: () => number;
}

/**
 * At most this much is added at random to a rate limit's wait. The wait holds the handler's whole
 * queue (runs.ts: `Queue.rateLimit`, one key, which a shorter wait leaves as it is), so its runs
 * all come back together when it ends; what the spread keeps apart are the queues: the handlers
 * that one 429 or the shared API limit stopped at once resume up to this far apart, not at once.
 */
export const RATE_LIMIT_SPREAD_MS = 1_000;

export function decideRun(outcome: AttemptResult, facts: AttemptFacts): RunDecision {
  if (outcome.ok) return { kind: 'completed', result: outcome.result ?? null };
  const { error } = outcome;
  const random = facts.random ?? Math.random;
  if (outcome.interrupted) return { kind: 'interrupted' };
  const reason = describe(error);
  if (isApiRateLimitedError(error)) {
    // BullMQ's manual rate limit is a key that expires after the wait, and Redis refuses an
    // expiry of 0 ms (or past 2^63): a 429 with `Retry-After: 0`, or a date gone by, threw from
    // the executor and spent an attempt. So 1 ms at least, and 30 days (MAX_SPAN_MS) at most.
    const wanted = error.retryAfterMs + Math.floor(random() * RATE_LIMIT_SPREAD_MS);
    return { kind: 'wait', delayMs: Math.min(MAX_SPAN_MS, Math.max(1, wanted)), reason };
  }
  if (isUnrecoverable(error) || isFinalApiError(error)) return { kind: 'fail', reason };
  if (facts.attempt >= facts.attempts) return { kind: 'fail', reason };
  return { kind: 'retry', delayMs: retryDelayMs(facts.backoff, facts.attempt, random), reason };
}

/**
 * The wait after attempt `attempt` failed: the handler's delay, doubled for each attempt before
 * it when exponential (at most MAX_SPAN_MS, 30 days), less up to `jitter` of it at random so that
 * retries spread out.
 */
export function retryDelayMs(
  backoff: Required<HandlerBackoff>,
  attempt: number,
  random: () => number = Math.random,
): number {
  // Doubled without end, a handler of many attempts waited centuries, and past attempt 1 024 or
  // so Infinity, which BullMQ keeps delayed for good: the run neither retried nor failed.
  const full =
    backoff.type === 'exponential'
      ? Math.min(MAX_SPAN_MS, backoff.delayMs * 2 ** (attempt - 1))
      : backoff.delayMs;
  return Math.round(full * (1 - backoff.jitter * random()));
}

/** BullMQ's own check, by name too, so an UnrecoverableError from another copy of bullmq counts. */
function isUnrecoverable(error: unknown): boolean {
  return (
    error instanceof UnrecoverableError ||
    (error instanceof Error && error.name === 'UnrecoverableError')
  );
}

/**
 * Most characters of a thrown value's message that a run keeps (its log lines, its attempts, its
 * reason in the dead letter): a handler that throws a whole response body must not write
 * megabytes to Redis and to the logs at every attempt.
 */
export const REASON_MAX_CHARS = 2_000;

/**
 * A thrown value's message, whatever was thrown: an Error's, or the `message` of an object that
 * carries one as a string; else the value as text. Cut to REASON_MAX_CHARS.
 */
export function describe(error: unknown): string {
  const text = messageOf(error);
  return text.length > REASON_MAX_CHARS
    ? `${cutText(text, REASON_MAX_CHARS)}… (${text.length} characters)`
    : text;
}

function messageOf(error: unknown): string {
  try {
    const message =
      typeof error === 'object' && error !== null && 'message' in error ? error.message : undefined;
    return typeof message === 'string' ? message : String(error);
  } catch {
    // A message getter that throws, an object without a way to become text (Object.create(null)).
    return Object.prototype.toString.call(error);
  }
}
