import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TIMEOUT_MS,
  defineHandler,
  isHandler,
  MAX_TIMEOUT_MS,
} from '../../../src/worker/handler.js';

const handle = () => undefined;

describe('defineHandler', () => {
  it('fills in the defaults', () => {
    const handler = defineHandler({ name: 'notify', handle });
    expect(handler).toMatchObject({
      name: 'notify',
      events: ['feedback.created'],
      where: undefined,
      attempts: 8,
      backoff: { type: 'exponential', delayMs: 1000, jitter: 0.5 },
      timeoutMs: 300_000,
    });
    expect(DEFAULT_TIMEOUT_MS, '5 minutes').toBe(300_000);
    expect(isHandler(handler)).toBe(true);
    expect(Object.isFrozen(handler)).toBe(true);
  });

  it.each(['', 'has space', 'has:colon', 'x'.repeat(65), '-leading'])(
    'refuses the name %j',
    (name) => {
      expect(() => defineHandler({ name, handle })).toThrow(/Handler name .* is not usable/);
    },
  );

  it("refuses the name 'routing', which names a delivery's routing in the console", () => {
    expect(() => defineHandler({ name: 'routing', handle })).toThrow(/"routing" is taken/);
  });

  it('refuses a definition without handle, or with nonsense attempts or backoff', () => {
    expect(() => defineHandler({ name: 'a' } as never)).toThrow(/no handle function/);
    expect(() => defineHandler({ name: 'a', attempts: 0, handle })).toThrow(/attempts/);
    expect(() => defineHandler({ name: 'a', backoff: { jitter: 2 }, handle })).toThrow(/jitter/);
  });

  it.each([
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a day past 30', 31 * 86_400_000],
    ['negative', -1],
  ])('refuses a backoff delayMs %s: the retry would wait for good', (_, delayMs) => {
    expect(() => defineHandler({ name: 'a', backoff: { delayMs }, handle })).toThrow(
      /delayMs from 0 to 30 days/,
    );
    expect(() => defineHandler({ name: 'a', events: [], handle })).toThrow(/events/);
  });

  it.each([
    ['a string duration', { max: 2, durationMs: '1m' }],
    ['no max', { durationMs: 1_000 }],
    ['a max of 0', { max: 0, durationMs: 1_000 }],
    ['a fractional duration', { max: 2, durationMs: 0.5 }],
    ['BullMQ’s own field names', { max: 2, duration: 1_000 }],
  ])('refuses a rateLimit with %s, naming its shape', (_, rateLimit) => {
    expect(() => defineHandler({ name: 'a', rateLimit: rateLimit as never, handle })).toThrow(
      'Handler "a": rateLimit must be { max, durationMs }, whole numbers of at least 1',
    );
  });

  // Past some 10^14 ms, Redis scripts write the number as 1e+14 and Redis refuses it: such a
  // window failed the routing of every grouped delivery, such a rateLimit stalled its queue.
  it('refuses a window or rateLimit longer than 30 days, such as Number.MAX_SAFE_INTEGER', () => {
    const forever = Number.MAX_SAFE_INTEGER;
    const window = (withinMs: number) => () =>
      defineHandler({ name: 'a', similarWindows: [{ atLeast: 5, withinMs }], handle });
    const limit = (durationMs: number) => () =>
      defineHandler({ name: 'a', rateLimit: { max: 1, durationMs }, handle });
    expect(window(forever)).toThrow(/withinMs at most 30 days/);
    expect(window(30 * 86_400_000 + 1)).toThrow(/withinMs at most 30 days/);
    expect(window(30 * 86_400_000)).not.toThrow();
    expect(limit(forever)).toThrow(/durationMs at most 30 days/);
    expect(limit(30 * 86_400_000)).not.toThrow();
  });

  it('keeps a rateLimit, frozen', () => {
    const handler = defineHandler({ name: 'a', rateLimit: { max: 2, durationMs: 1_000 }, handle });
    expect(handler.rateLimit).toEqual({ max: 2, durationMs: 1_000 });
    expect(Object.isFrozen(handler.rateLimit)).toBe(true);
    expect(defineHandler({ name: 'b', handle }).rateLimit).toBeUndefined();
  });

  it.each([
    ['0', 0],
    ['a negative number', -1],
    ['a fraction', 1.5],
    ['a string', '5m'],
    ['null', null],
    ['Infinity', Infinity],
    ["more than setTimeout's longest delay", MAX_TIMEOUT_MS + 1],
  ])('refuses a timeoutMs of %s, naming its bounds', (_, timeoutMs) => {
    expect(() => defineHandler({ name: 'a', timeoutMs: timeoutMs as never, handle })).toThrow(
      `Handler "a": timeoutMs must be a whole number of ms from 1 to ${MAX_TIMEOUT_MS}`,
    );
  });

  it('keeps a timeoutMs from 1 ms to the longest delay', () => {
    expect(defineHandler({ name: 'a', timeoutMs: 1, handle }).timeoutMs).toBe(1);
    expect(defineHandler({ name: 'a', timeoutMs: MAX_TIMEOUT_MS, handle }).timeoutMs).toBe(
      MAX_TIMEOUT_MS,
    );
  });

  it('does not take plain objects for handlers', () => {
    expect(isHandler({ name: 'a', handle })).toBe(false);
    expect(isHandler(undefined)).toBe(false);
  });
});
