/**
 * What a group-size window may be (SimilarWindow): checked where a handler declares one
 * (defineHandler) and where a worker reads the ones other workers' handlers declare (the roster).
 */
import type { SimilarWindow } from './similar-facts.js';

/**
 * The longest window, rate-limit duration or retry delay, as triage rules' `within`: 30 days.
 * Redis scripts write a number past some 10^14 as `1e+14`, which Redis refuses: a window that
 * long failed the routing of every grouped delivery, a rateLimit that long stalled its queue.
 */
export const MAX_SPAN_MS = 30 * 86_400_000;

export function isWholeAtLeastOne(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1;
}

/** A whole number of ms from 1 to MAX_SPAN_MS. */
export function isSpan(value: unknown): value is number {
  return isWholeAtLeastOne(value) && value <= MAX_SPAN_MS;
}

export function isSimilarWindow(value: unknown): value is SimilarWindow {
  const window = value as Partial<SimilarWindow> | null | undefined;
  return isWholeAtLeastOne(window?.atLeast) && isSpan(window?.withinMs);
}

/** Each window once, in the order first given. */
export function distinctWindows(windows: readonly SimilarWindow[]): SimilarWindow[] {
  const seen = new Map<string, SimilarWindow>();
  for (const window of windows) seen.set(`${window.atLeast}:${window.withinMs}`, window);
  return [...seen.values()];
}
