import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import {
  ApiConflictError,
  ApiForbiddenError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiServerError,
  ApiUnauthorizedError,
  ApiValidationError,
} from '../../../src/api/api-errors.js';
import { attemptTimeoutError } from '../../../src/worker/attempt-timeout.js';
import { MAX_SPAN_MS } from '../../../src/similar/similar-window.js';
import {
  decideRun,
  REASON_MAX_CHARS,
  retryDelayMs,
  type AttemptFacts,
} from '../../../src/worker/run-policy.js';

const at = { method: 'PATCH', url: 'http://127.0.0.1/v1/feedback/fb_1' };
const facts: AttemptFacts = {
  attempt: 2,
  attempts: 5,
  backoff: { type: 'exponential', delayMs: 1_000, jitter: 0 },
  random: () => 0.5,
};
const failed = (error: unknown, more: Partial<AttemptFacts> = {}, interrupted = false) =>
  decideRun({ ok: false, error, interrupted }, { ...facts, ...more });

// One row per row of the "When a run fails" table (docs/handlers.md), and the run that does not fail.
describe('decideRun', () => {
  it('completes a run whose handler returned, with what it returned (null for nothing)', () => {
    expect(decideRun({ ok: true, result: { id: 1 } }, facts)).toEqual({
      kind: 'completed',
      result: { id: 1 },
    });
    expect(decideRun({ ok: true, result: undefined }, facts)).toEqual({
      kind: 'completed',
      result: null,
    });
  });

  it.each([
    ['the API answered 429', 'service'],
    ['the shared rate limit is used up', 'limiter'],
  ] as const)('waits without spending an attempt when %s', (_, source) => {
    const error = new ApiRateLimitedError({ ...at, status: 429, retryAfterMs: 7_000, source });
    // Even on the last attempt: a wait is not an attempt.
    expect(failed(error, { attempt: 5 })).toEqual({
      kind: 'wait',
      delayMs: 7_500,
      reason: error.message,
    });
  });

  it.each([
    ['Retry-After: 0', 0, 1],
    ['a Retry-After past 30 days', Number.MAX_VALUE, MAX_SPAN_MS],
  ])('waits as BullMQ can (1 ms to 30 days) when the API says %s', (_, retryAfterMs, delayMs) => {
    const error = new ApiRateLimitedError({ ...at, status: 429, retryAfterMs, source: 'service' });
    expect(failed(error, { random: () => 0 })).toMatchObject({ kind: 'wait', delayMs });
  });

  it.each([
    ['UnrecoverableError', new UnrecoverableError('cannot ever work')],
    ['400', new ApiValidationError({ ...at, status: 400 })],
    ['401', new ApiUnauthorizedError({ ...at, status: 401 })],
    ['403', new ApiForbiddenError({ ...at, status: 403 })],
    ['404', new ApiNotFoundError({ ...at, status: 404 })],
    ['409', new ApiConflictError({ ...at, status: 409 })],
    ['422', new ApiValidationError({ ...at, status: 422 })],
  ])('fails for good, on the first attempt, for %s', (_, error) => {
    expect(failed(error, { attempt: 1 })).toEqual({ kind: 'fail', reason: error.message });
  });

  it('counts an UnrecoverableError from another copy of bullmq by its name', () => {
    const foreign = Object.assign(new Error('elsewhere'), { name: 'UnrecoverableError' });
    expect(failed(foreign, { attempt: 1 }).kind).toBe('fail');
  });

  it.each([
    ['an error of the handler', new Error('downstream is down')],
    ["the API's 500", new ApiServerError({ ...at, status: 500 })],
    ['a thrown string', 'not an Error'],
  ])("retries %s after the handler's backoff", (_, error) => {
    expect(failed(error)).toEqual({
      kind: 'retry',
      delayMs: 2_000,
      reason: error instanceof Error ? error.message : error,
    });
  });

  it('fails for good after the last attempt', () => {
    expect(failed(new Error('still down'), { attempt: 5 })).toEqual({
      kind: 'fail',
      reason: 'still down',
    });
  });

  it('retries an attempt that timed out with the backoff, and fails it for good after the last', () => {
    const timeout = attemptTimeoutError('slow', 50);
    expect(failed(timeout)).toEqual({
      kind: 'retry',
      delayMs: 2_000,
      reason: 'handler "slow" timed out after 50 ms',
    });
    expect(failed(timeout, { attempt: 5 })).toEqual({
      kind: 'fail',
      reason: 'handler "slow" timed out after 50 ms',
    });
  });

  it('puts back a run the shutdown interrupted, whatever it threw, without spending an attempt', () => {
    for (const error of [new Error('aborted'), new UnrecoverableError('x')]) {
      expect(failed(error, { attempt: 5 }, true)).toEqual({ kind: 'interrupted' });
    }
  });
});

describe("a failed run's reason", () => {
  const reasonOf = (error: unknown) => {
    const decision = failed(error);
    return 'reason' in decision ? decision.reason : undefined;
  };

  it('is the message of a thrown object that carries one, not "[object Object]"', () => {
    expect(reasonOf({ message: 'quota exceeded', code: 'QUOTA' })).toBe('quota exceeded');
  });

  it('is cut to its first REASON_MAX_CHARS characters, saying how long it was', () => {
    for (const error of [new Error('y'.repeat(5_000_000)), { message: 'y'.repeat(5_000_000) }]) {
      const reason = reasonOf(error) ?? '';
      expect(reason.startsWith('y'.repeat(REASON_MAX_CHARS))).toBe(true);
      expect(reason.slice(REASON_MAX_CHARS)).toBe('… (5000000 characters)');
    }
  });

  it('is a string whatever was thrown, even a value String() refuses', () => {
    const unreadable = {
      get message() {
        throw new Error('no');
      },
    };
    const odd = [null, undefined, 42, Symbol('s'), 10n, Object.create(null), unreadable];
    for (const error of odd) expect(typeof reasonOf(error)).toBe('string');
    expect(reasonOf(Object.assign(new Error('x'), { message: { a: 1 } }))).toEqual(
      expect.any(String),
    );
  });
});

describe('retryDelayMs', () => {
  it('doubles an exponential delay for each attempt before', () => {
    const backoff = { type: 'exponential', delayMs: 100, jitter: 0 } as const;
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(backoff, attempt))).toEqual([
      100, 200, 400, 800,
    ]);
  });

  it('doubles an exponential delay up to 30 days, however many attempts', () => {
    const backoff = { type: 'exponential', delayMs: 86_400_000, jitter: 0 } as const;
    const thirtyDays = 30 * 86_400_000;
    expect([5, 6, 12, 2_000].map((attempt) => retryDelayMs(backoff, attempt))).toEqual([
      16 * 86_400_000,
      thirtyDays,
      thirtyDays,
      thirtyDays,
    ]);
  });

  it('keeps a fixed delay', () => {
    const backoff = { type: 'fixed', delayMs: 100, jitter: 0 } as const;
    expect(retryDelayMs(backoff, 4)).toBe(100);
  });

  it('takes up to `jitter` of the delay off at random', () => {
    const backoff = { type: 'fixed', delayMs: 1_000, jitter: 0.5 } as const;
    expect(retryDelayMs(backoff, 1, () => 0)).toBe(1_000);
    expect(retryDelayMs(backoff, 1, () => 0.9)).toBe(550);
  });
});
