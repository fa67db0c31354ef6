import type { Handler } from './handler.js';

/**
 * BullMQ obeys a manual rate limit (runs.ts: a 429, or our shared limit) only on a queue with a
 * limiter; this one, for a handler without a `rateLimit`, never limits by itself. BullMQ counts a
 * global rate limit over the limiter's duration, not its own (docs/runs.md, "The queues").
 */
export const RUNS_LIMITER = { max: 1_000_000_000, duration: 1_000 } as const;

/** The limiter of a handler's workers: its `rateLimit`, kept in Redis per queue, or RUNS_LIMITER. */
export function limiterOf({ rateLimit }: Handler): { max: number; duration: number } {
  return rateLimit ? { max: rateLimit.max, duration: rateLimit.durationMs } : RUNS_LIMITER;
}
