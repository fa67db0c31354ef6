import { describe, expect, it } from 'vitest';
import {
  abandonedAttempts,
  isAttemptTimeout,
  settleWithin,
  type TimeoutWatch,
} from '../../../src/worker/attempt-timeout.js';

/** A handler's promise that settles only when the test says so, as a hung fetch would not. */
function hung() {
  let release!: () => void;
  const pending = new Promise<string>((resolve) => (release = () => resolve('late')));
  return { pending, release };
}

function watchOver(abandoned: ReturnType<typeof abandonedAttempts>) {
  const left: boolean[] = [];
  const watch: TimeoutWatch = {
    handler: 'hangs',
    timeoutMs: 5,
    abort: () => {},
    abandon: (pending) => {
      const leaving = abandoned.leave(pending);
      left.push(leaving);
      return leaving;
    },
  };
  return { watch, left };
}

describe('attempts left running after their timeout', () => {
  it('frees the slot of at most `most` attempts that ignore their signal, and keeps the next one until it settles', async () => {
    const abandoned = abandonedAttempts(2);
    const { watch, left } = watchOver(abandoned);
    const handlers = [hung(), hung(), hung()];
    const [first, second] = await Promise.allSettled(
      handlers.slice(0, 2).map(({ pending }) => settleWithin(pending, watch)),
    );
    expect([first?.status, second?.status]).toEqual(['rejected', 'rejected']);
    expect(abandoned.running).toBe(2);

    // A third: past the cap, its attempt waits for the handler, then fails for its timeout.
    let third: unknown = 'still waiting';
    const attempt = settleWithin(handlers[2]!.pending, watch).catch((error) => (third = error));
    await expect.poll(() => left).toEqual([true, true, false]);
    expect(third, 'the slot is kept while the handler runs').toBe('still waiting');
    handlers[2]!.release();
    await attempt;
    expect(isAttemptTimeout(third)).toBe(true);

    // One left running settles: the next attempt that ignores its signal may be left again.
    handlers[0]!.release();
    await expect.poll(() => abandoned.running).toBe(1);
    const fourth = hung();
    await expect(settleWithin(fourth.pending, watch)).rejects.toSatisfy(isAttemptTimeout);
    expect(left).toEqual([true, true, false, true]);
    for (const { release } of [handlers[1]!, fourth]) release();
  });
});
