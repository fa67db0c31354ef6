/**
 * The limiter of a handler's BullMQ workers, kept in Redis per queue: its `rateLimit`, or one
 * that never limits by itself.
 */
import type { Handler } from './handler.js';

/**
 * BullMQ obeys a manual rate limit (runs.ts: a 429, or our shared limit) only on a queue with a
 * limiter; this one, for a handler without a `rateLimit`, never limits by itself. A limiter's
 * duration is how long a count of taken jobs lasts, and BullMQ takes it over a global rate limit's
 * own (`setGlobalRateLimit(1, 60_000)` lets one run a second through): a worker warns of a global
 * rate limit on its handlers' queues, and the dashboard does not set one.
 */
export const RUNS_LIMITER = { max: 1_000_000_000, duration: 1_000 } as const;

/** The limiter of a handler's workers: its `rateLimit`, kept in Redis per queue, or RUNS_LIMITER. */
export function limiterOf({ rateLimit }: Handler): { max: number; duration: number } {
  return rateLimit ? { max: rateLimit.max, duration: rateLimit.durationMs } : RUNS_LIMITER;
}
