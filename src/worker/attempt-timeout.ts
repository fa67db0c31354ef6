/**
 * An attempt's timeout (the handler's `timeoutMs`): a handler whose `handle` never settles (a
 * fetch with no timeout, a promise nobody resolves) would hold its worker's slot until shutdown,
 * its run "running" for ever. At the timeout its signal fires and the worker stops waiting: the
 * attempt fails, whatever the handler does next.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * The reason the run's signal fires with at the timeout, and the attempt's error: a DOMException
 * named `TimeoutError`, as `AbortSignal.timeout` makes, so `fetch` rejects with it and a handler
 * can tell it from the shutdown's abort by its name.
 */
export function attemptTimeoutError(handler: string, timeoutMs: number): DOMException {
  return new DOMException(`handler "${handler}" timed out after ${timeoutMs} ms`, 'TimeoutError');
}

/** Whether a run was aborted for its timeout, not for the worker's shutdown. */
export function isAttemptTimeout(reason: unknown): reason is DOMException {
  return reason instanceof DOMException && reason.name === 'TimeoutError';
}

export interface TimeoutWatch {
  readonly handler: string;
  readonly timeoutMs: number;
  /** Fires the run's signal with the timeout's error. */
  abort(reason: DOMException): void;
  /**
   * The handler had not settled a turn of the event loop after its signal fired: whether the
   * worker may stop waiting for it (`pending` is then left to run), or must keep the slot until it
   * settles, as too many abandoned attempts still run (each holds its record and whatever more).
   */
  abandon(pending: PromiseLike<unknown>): boolean;
}

/**
 * Most attempts a worker leaves running after their timeout. Past it, an attempt that ignores its
 * signal keeps its slot until it settles, as it did before timeouts: abandoned attempts cannot
 * pile up without bound, and a worker whose handler hangs on every record stops taking more.
 */
export const MOST_ABANDONED_ATTEMPTS = 64;

/** Counts the attempts left running after their timeout, until each settles. */
export function abandonedAttempts(most = MOST_ABANDONED_ATTEMPTS) {
  let running = 0;
  return {
    get running() {
      return running;
    },
    /** Counts `pending` until it settles, if fewer than `most` are counted; else false. */
    leave(pending: PromiseLike<unknown>): boolean {
      if (running >= most) return false;
      running += 1;
      const settled = () => void (running -= 1);
      pending.then(settled, settled);
      return true;
    },
  };
}

/**
 * What `pending` settles to, or at the timeout the TimeoutError, after firing the signal. One
 * turn of the event loop is left to a handler that honours its signal (its rejection is
 * microtasks away); one that has not settled by then is left to run (`abandon`): nothing can stop
 * a promise, and the slot need not wait for it while few are left running.
 */
export async function settleWithin<T>(pending: PromiseLike<T>, watch: TimeoutWatch): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timeout: DOMException | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timeout = attemptTimeoutError(watch.handler, watch.timeoutMs);
      // Rejected before the signal fires, so the timeout wins the race over the rejection a
      // handler that honours its signal gives.
      reject(timeout);
      watch.abort(timeout);
    }, watch.timeoutMs);
    // A worker's connections keep the process up while it runs; after its close, the timer of an
    // abandoned attempt must not hold an embedding process's exit for up to its timeoutMs.
    timer.unref();
  });
  try {
    return await Promise.race([pending, timedOut]);
  } catch (error) {
    if (error === timeout) await reportIfIgnored(pending, watch);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function reportIfIgnored(pending: PromiseLike<unknown>, watch: TimeoutWatch): Promise<void> {
  let settled = false;
  const settling = Promise.resolve(pending).then(
    () => void (settled = true),
    () => void (settled = true),
  );
  await nextTurn();
  if (!settled && !watch.abandon(pending)) await settling;
}
