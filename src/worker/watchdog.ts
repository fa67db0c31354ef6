/**
 * A BullMQ worker that keeps running but takes no job is recreated. After a Redis failover a
 * worker can be left that way, its blocking connection gone for good while it reports no error
 * (bullmq issues 3185, 4378, 4479): BullMQ relies on ioredis to reconnect and cannot tell.
 *
 * The watchdog looks from outside, through public calls only: jobs are waiting, BullMQ would hand
 * them out, the worker has room for more, and it has taken none for `stuckAfterMs`. Then it makes
 * a new worker and closes the old one, with a warning and `feedback_receiver_worker_restarts_total`.
 * A worker that is busy is never restarted, nor one whose queue BullMQ itself holds back: empty,
 * paused, rate limited (a handler's 429, or a limit set in the dashboard), or at its global
 * concurrency (set in the dashboard) with jobs active elsewhere.
 *
 * Each worker it makes gets a connection of its own (a duplicate of the process's), and closing
 * or cutting off a worker closes only that one: the queues, the completion ledger and the rate
 * limiter share the process's connection, which no worker's end may take with it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job, Queue, Worker } from 'bullmq';
import type { Logger } from '../logger.js';
import { closeConnection, duplicateConnection, type RedisConnection } from '../queue/redis.js';

export type Processor<T> = (job: Job<T>, token?: string) => Promise<unknown>;

export interface WatchdogOptions<T> {
  /** The queue the worker consumes, to count the jobs waiting in it. */
  readonly queue: Queue;
  /** The process's connection: each worker gets a duplicate of it. */
  readonly connection: RedisConnection;
  /**
   * Makes a worker that runs `processor` (given back wrapped, so the watchdog sees jobs taken) on
   * `connection`, which is the worker's own.
   */
  readonly create: (processor: Processor<T>, connection: RedisConnection) => Worker<T>;
  readonly processor: Processor<T>;
  readonly concurrency: number;
  /** How long jobs may wait while the worker has room and takes none (WORKER_WATCHDOG_SECONDS). */
  readonly stuckAfterMs: number;
  readonly logger: Logger;
  /** Called with the queue's name each time a worker is recreated. */
  readonly restarted?: (queue: string) => void;
}

export interface WatchedWorker<T> {
  /** The worker in use now; a restart replaces it. */
  readonly worker: Worker<T>;
  /** Stops watching and closes the worker in use (waiting for its running jobs). */
  close(): Promise<void>;
  /**
   * Cuts the workers off from Redis without waiting for their running jobs: their locks expire,
   * and other workers run them again. Returns at once.
   */
  abandon(): void;
}

/** How often a replaced worker that has not closed yet is looked at again. */
const CLOSE_REPLACED_WITHIN_MS = 5_000;

export function watchWorker<T>(options: WatchdogOptions<T>): WatchedWorker<T> {
  const { queue, concurrency, stuckAfterMs, logger } = options;
  /** Jobs running on every worker of this watchdog, the current one and any it replaced. */
  let running = 0;
  let lastTakenAt = Date.now();

  /** A worker on a connection of its own, which goes with it, and the jobs running on it. */
  const start = () => {
    const connection = duplicateConnection(options.connection);
    // The process's connection already reports an outage; this one's errors are the same ones.
    connection.on('error', (error: Error) =>
      logger.debug({ error: error.message }, 'worker connection error'),
    );
    let runningHere = 0;
    const tracked: Processor<T> = async (job, token) => {
      running += 1;
      runningHere += 1;
      lastTakenAt = Date.now();
      try {
        return await options.processor(job, token);
      } finally {
        running -= 1;
        runningHere -= 1;
      }
    };
    return { worker: options.create(tracked, connection), connection, running: () => runningHere };
  };
  type Started = ReturnType<typeof start>;
  /** Aborted when the watchdog stops: no check, and no restart, after that. */
  const stop = new AbortController();
  let current = start();
  /** Replaced workers still finishing their jobs, each until it has closed. */
  const retiring = new Map<Started, Promise<void>>();

  let lastCheckAt = Date.now();
  /** Since when every check found jobs waiting, room for them, and none taken. */
  let idleSince: number | undefined;

  async function check(): Promise<void> {
    const now = Date.now();
    const idle = running < concurrency && lastTakenAt < lastCheckAt && (await jobsWaiting());
    if (!idle) idleSince = undefined;
    else if (now - (idleSince ??= lastCheckAt) >= stuckAfterMs) restart(now - idleSince);
    lastCheckAt = now;
  }

  /** Jobs wait that BullMQ would hand to a worker now. */
  async function jobsWaiting(): Promise<boolean> {
    try {
      if ((await queue.getWaitingCount()) === 0 || (await queue.isPaused())) return false;
      if ((await queue.getRateLimitTtl()) > 0) return false;
      const most = await queue.getGlobalConcurrency();
      return most === null || (await queue.getActiveCount()) < most;
    } catch {
      return false; // the queue's connection refused the read: nothing to tell from it
    }
  }

  function restart(idleForMs: number): void {
    if (stop.signal.aborted) return;
    logger.warn(
      { queue: queue.name, idleForMs },
      'worker took no job while jobs waited: recreating it',
    );
    options.restarted?.(queue.name);
    const replaced = current;
    current = start();
    idleSince = undefined;
    retiring.set(
      replaced,
      retire(replaced).finally(() => retiring.delete(replaced)),
    );
  }

  /**
   * Closes a replaced worker in the background. Its running jobs finish on it: its own connection
   * still renews their locks (only its blocking one may be gone), so none of them is taken up a
   * second time while it runs. A worker with no job left whose close still hangs is cut off.
   */
  async function retire(replaced: Started): Promise<void> {
    const closed = replaced.worker.close().then(
      () => true,
      () => true,
    );
    for (;;) {
      const late = sleep(CLOSE_REPLACED_WITHIN_MS, false, { ref: false });
      if (await Promise.race([closed, late])) return closeConnection(replaced.connection);
      if (replaced.running() === 0) return cutOff(replaced);
    }
  }

  /**
   * Ends a worker's connections, its own and the blocking one BullMQ made from it, without
   * waiting: BullMQ's disconnect waits for an end that a connection already down never sees.
   */
  function cutOff({ worker, connection }: Started): void {
    void worker.disconnect().catch(() => undefined);
    connection.disconnect();
  }

  const checks = (async () => {
    const every = Math.min(5_000, Math.max(100, Math.floor(stuckAfterMs / 3)));
    while (!stop.signal.aborted) {
      await sleep(every, undefined, { ref: false, signal: stop.signal }).catch(() => undefined);
      if (!stop.signal.aborted)
        await check().catch((error: unknown) => {
          logger.warn(
            { error: error instanceof Error ? error.message : String(error) },
            'worker watchdog failed',
          );
        });
    }
  })();

  return {
    get worker() {
      return current.worker;
    },
    async close() {
      stop.abort();
      await checks;
      await Promise.all([
        current.worker.close().then(() => closeConnection(current.connection)),
        ...retiring.values(),
      ]);
    },
    abandon() {
      stop.abort();
      for (const started of [current, ...retiring.keys()]) cutOff(started);
    },
  };
}
