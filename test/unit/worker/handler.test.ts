import { describe, expect, it } from 'vitest';
import { defineHandler, isHandler } from '../../../src/worker/handler.js';

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
    });
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
    expect(() => defineHandler({ name: 'a', events: [], handle })).toThrow(/events/);
  });

  it('does not take plain objects for handlers', () => {
    expect(isHandler({ name: 'a', handle })).toBe(false);
    expect(isHandler(undefined)).toBe(false);
  });
});
