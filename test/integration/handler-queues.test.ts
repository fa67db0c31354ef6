/**
 * A queue per handler, on real workers: a run waits in its handler's queue for a worker that has
 * the handler, an operator's retry included; a rate limit stops the handler's queue instead of
 * bouncing each of its runs; a handler's own error never passes for one of BullMQ's signals.
 */
import { RATE_LIMIT_ERROR, type Queue } from 'bullmq';
import { afterEach, expect, it, vi } from 'vitest';
import { ApiRateLimitedError } from '../../src/api/api-errors.js';
import {
  createRunQueue,
  runJobId,
  runQueueName,
  type HandlerRunData,
} from '../../src/runs/run-queues.js';
import { readRoster } from '../../src/runs/handler-roster.js';
import { RUNS_LIMITER } from '../../src/worker/handler-limiter.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function setUp(): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  return env;
}

const eventually = <T>(check: () => T | Promise<T>) =>
  vi.waitFor(check, { timeout: 10_000, interval: 50 });

async function unfinished(queue: Queue) {
  const { waiting, active, delayed } = await queue.getJobCounts('waiting', 'active', 'delayed');
  return { waiting, active, delayed };
}

it("keeps an operator's retry of a run waiting while no worker has its handler", async () => {
  const env = await setUp();
  const aRan: string[] = [];
  const a = defineHandler({ name: 'a', handle: ({ record }) => void aRan.push(record.id) });
  const failing = defineHandler({
    name: 'b',
    attempts: 1,
    handle: () => {
      throw new Error('b: broken in this release');
    },
  });
  const first = await env.startWorker({ handlers: [a, failing] });
  await env.deliver({ id: 'fb_old' });
  await env.failedRuns(1);
  const [failed] = await env.deadLetter().list();
  expect(failed).toMatchObject({ handler: 'b', deliveryKey: 'feedback.created:fb_old' });
  await first.close(1_000);

  // A rolling deploy: the first worker up runs the release without b. The operator retries.
  const older = await env.startWorker({ handlers: [a] });
  expect(await env.deadLetter().retry(failed!.id), 'the retry').toBe(true);
  await env.deliver({ id: 'fb_new' });
  await eventually(() => expect(aRan, 'the older worker at work').toContain('fb_new'));
  // Both of b's runs wait: the retried one, and the new delivery's (a worker had b a moment ago,
  // so routing added it; its where() is asked by the worker that takes it).
  expect(await unfinished(older.runQueues.of('b')), "b's runs").toEqual({
    waiting: 2,
    active: 0,
    delayed: 0,
  });
  expect(await env.deadLetter().count(), 'the dead letter').toBe(0);

  // The release with b fixed comes up and takes it.
  const bRan: string[] = [];
  await env.startWorker({
    handlers: [a, defineHandler({ name: 'b', handle: ({ record }) => void bRan.push(record.id) })],
  });
  await eventually(() => expect(bRan.sort()).toEqual(['fb_new', 'fb_old']));
});

it.each([
  ['', undefined],
  [' with a rateLimit of its own', { max: 1_000, durationMs: 1_000 }],
])(
  "stops a rate-limited handler's queue%s: its runs wait there instead of bouncing",
  async (_, rateLimit) => {
    const env = await setUp();
    const WINDOW_MS = 2_000;
    let limitedUntil: number | undefined;
    let callsInWindow = 0;
    let completed = 0;
    const runtime = await env.startWorker({
      concurrency: 1,
      handlers: [
        defineHandler({
          name: 'limited',
          ...(rateLimit ? { rateLimit } : {}),
          handle: () => {
            const now = Date.now();
            limitedUntil ??= now + WINDOW_MS;
            // Every call within the window meets the API's limit, as a real 429 would.
            if (now < limitedUntil) {
              callsInWindow += 1;
              throw new ApiRateLimitedError({
                method: 'PATCH',
                url: 'http://127.0.0.1/v1/feedback/1',
                status: 429,
                retryAfterMs: limitedUntil - now,
                source: 'service',
              });
            }
            completed += 1;
          },
        }),
      ],
    });
    const queue = runtime.runQueues.of('limited');
    const records = Array.from({ length: 20 }, (_, n) => `fb_limit_${n}`);
    await Promise.all(records.map((id) => env.deliver({ id })));
    await env.completedRuns(records.length);
    expect(completed).toBe(records.length);
    // One call met the limit; the queue waited out the window instead of trying each run.
    expect(callsInWindow, 'calls while the limit held').toBe(1);
    const runs = await Promise.all(
      records.map(async (id) => {
        const delivery = await env.producer.find(`feedback.created:${id}`);
        return queue.getJob(runJobId(delivery!.id!, 'limited'));
      }),
    );
    expect(
      runs.map((job) => job?.attemptsMade),
      'attempts made by each run: the wait spent none',
    ).toEqual(records.map(() => 1));
  },
);

/** The API's 429 with `Retry-After: 0`: try again at once. */
const retryAtOnce = () =>
  new ApiRateLimitedError({
    method: 'PATCH',
    url: 'http://127.0.0.1/v1/feedback/1',
    status: 429,
    retryAfterMs: 0,
    source: 'service',
  });

/** Adds no spread at random to a rate limit's wait (run-policy.ts), until the test ends. */
function withoutSpread(): void {
  vi.spyOn(Math, 'random').mockReturnValue(0);
  cleanup.push(async () => vi.restoreAllMocks());
}

it('waits out a 429 that says to try again at once (Retry-After: 0) without spending an attempt', async () => {
  const env = await setUp();
  // No spread added at random: the wait is what the API said, 0 ms.
  withoutSpread();
  let calls = 0;
  await env.startWorker({
    handlers: [
      defineHandler({
        name: 'at-once',
        attempts: 1, // a wait that spent an attempt would fail this run for good
        handle: () => {
          calls += 1;
          if (calls > 1) return;
          throw retryAtOnce();
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_retry_after_0' });
  await eventually(async () => {
    const [entry] = await env.deadLetter().list();
    expect(entry?.reason, 'the dead letter').toBeUndefined();
    expect(calls).toBe(2);
  });
  await env.completedRuns(1);
});

it('routes a delivery to the handlers every running worker has, whichever worker routes it', async () => {
  const env = await setUp();
  const ran = { a: new Set<string>(), b: new Set<string>() };
  const handler = (name: 'a' | 'b') =>
    defineHandler({
      name,
      // b's where() is asked by a worker that has b, whoever routed the delivery.
      where: (record) => name === 'a' || !record.id.endsWith('_unwanted'),
      handle: ({ record }) => void ran[name].add(record.id),
    });
  // Each of the workers that route started after the other had written its handlers.
  const first = await env.startWorker({ handlers: [handler('b')] });
  await env.startWorker({ handlers: [handler('a')] });
  const last = await env.startWorker({ handlers: [handler('b')] });
  await first.close(1_000);
  const ids = [...Array.from({ length: 20 }, (_, n) => `fb_split_${n}`), 'fb_split_unwanted'];
  for (const id of ids) await env.deliver({ id });
  // The unwanted delivery has a run of b (skipped at its first attempt) only when the worker
  // without b routed it: count what ran, then wait for every run to settle.
  const wanted = ids.filter((id) => !id.endsWith('_unwanted')).sort();
  await eventually(() => {
    expect(ran.a.size).toBe(ids.length);
    expect(ran.b.size).toBe(wanted.length);
  });
  await eventually(async () =>
    expect(await Promise.all((await last.runQueues.all()).map(unfinished))).toEqual(
      (await last.runQueues.handlers()).map(() => ({ waiting: 0, active: 0, delayed: 0 })),
    ),
  );
  expect([...ran.a].sort()).toEqual([...ids].sort());
  expect([...ran.b].sort()).toEqual(wanted);
});

it('keeps offering the handlers of a worker up for longer than the roster remembers', async () => {
  const env = await setUp();
  // Started 8 days ago: the roster offers a handler a week after it was last written.
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 8 * 86_400_000 });
  try {
    await env.startWorker({
      announceEveryMs: 50,
      handlers: [defineHandler({ name: 'long-lived', attempts: 3, handle: () => {} })],
    });
  } finally {
    vi.useRealTimers();
  }
  await eventually(async () =>
    expect(await readRoster(env.connection, env.prefix)).toEqual([
      { name: 'long-lived', attempts: 3, events: ['feedback.created'] },
    ]),
  );
});

/**
 * Start times grouped as BullMQ's limiter counts them: a window opens at the first run it lets
 * start and lasts `durationMs`; the next opens at the first start after it.
 */
function limiterWindows(starts: readonly number[], durationMs: number): number[][] {
  const windows: number[][] = [];
  for (const start of [...starts].sort((a, b) => a - b)) {
    const open = windows.at(-1);
    if (open && start < open[0]! + durationMs) open.push(start);
    else windows.push([start]);
  }
  return windows;
}

/**
 * A job's processedOn is the taking worker's clock as it asks Redis for the job, a moment before
 * Redis counts it in the limiter's window: the next window's first start may read this much early.
 */
const CLOCK_SLACK_MS = 20;

it("starts at most a handler's rateLimit.max runs in its durationMs, across its workers", async () => {
  const env = await setUp();
  const rateLimit = { max: 2, durationMs: 1_000 };
  const tookBy = { first: 0, second: 0 };
  const paced = (worker: keyof typeof tookBy) =>
    defineHandler({ name: 'paced', rateLimit, handle: () => void (tookBy[worker] += 1) });
  // Every run waits before a worker takes one, so that each window fills at once.
  const queue = createRunQueue(env.connection, env.prefix, 'paced');
  cleanup.push(() => queue.close());
  await queue.pause();
  await env.startWorker({ handlers: [paced('first')] });
  await env.startWorker({ handlers: [paced('second')] });
  const records = Array.from({ length: 7 }, (_, n) => `fb_paced_${n}`);
  for (const id of records) await env.deliver({ id });
  await eventually(async () => expect(await queue.getWaitingCount()).toBe(records.length));
  await queue.resume();
  await env.completedRuns(records.length, 15_000);

  const starts = (await queue.getCompleted()).map((job) => job.processedOn!);
  expect(starts).toHaveLength(records.length);
  const windows = limiterWindows(starts, rateLimit.durationMs - CLOCK_SLACK_MS);
  expect(
    windows.filter((window) => window.length > rateLimit.max),
    `windows with more than ${rateLimit.max} starts (runs taken by each worker: ${JSON.stringify(tookBy)})`,
  ).toEqual([]);
});

it("keeps a longer hold on a handler's queue when a 429 asks for a shorter wait", async () => {
  const env = await setUp();
  withoutSpread();
  const queue = createRunQueue(env.connection, env.prefix, 'held');
  cleanup.push(() => queue.close());
  let calls = 0;
  await env.startWorker({
    handlers: [
      defineHandler({
        name: 'held',
        rateLimit: { max: 5, durationMs: 60_000 },
        handle: async () => {
          calls += 1;
          // Another run's 429 has just held the queue for a minute; this one's says 0 ms.
          await queue.rateLimit(60_000);
          throw retryAtOnce();
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_held' });
  await eventually(async () => expect(await queue.getWaitingCount()).toBe(1));
  expect(calls).toBe(1);
  expect(await queue.getRateLimitTtl()).toBeGreaterThan(30_000);
});

it("waits only a 429's own wait in a rateLimit window with room left, not the day it lasts", async () => {
  const env = await setUp();
  withoutSpread();
  let calls = 0;
  const queue = createRunQueue(env.connection, env.prefix, 'daily');
  cleanup.push(() => queue.close());
  await env.startWorker({
    handlers: [
      defineHandler({
        name: 'daily',
        rateLimit: { max: 1_000, durationMs: 24 * 60 * 60_000 },
        handle: () => {
          calls += 1;
          if (calls === 1) throw retryAtOnce();
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_daily_0' });
  // Held for the rest of the day's window, the run would still be waiting at the deadline.
  await env.completedRuns(1, 15_000);
  expect(calls).toBe(2);
});

it("warns at start of a global rate limit on a handler's queue, which BullMQ counts per second, and names the handler's own", async () => {
  const env = await setUp();
  const queue = createRunQueue(env.connection, env.prefix, 'limited');
  cleanup.push(() => queue.close());
  await queue.setGlobalRateLimit(1, 60_000);
  await env.startWorker({ handlers: [defineHandler({ name: 'limited', handle: () => {} })] });
  expect(env.logs).toContainEqual(
    expect.objectContaining({
      level: 40,
      queue: runQueueName('limited'),
      max: 1,
      duration: 60_000,
      countedOverMs: RUNS_LIMITER.duration,
      msg: expect.stringContaining('defineHandler({ rateLimit: { max: 1, durationMs: 60000 } })'),
    }),
  );
});

it.each([
  ['named DelayedError', Object.assign(new Error('the handler gave up'), { name: 'DelayedError' })],
  ['named WaitingError', Object.assign(new Error('the handler gave up'), { name: 'WaitingError' })],
  ["with BullMQ's rate limit message", new Error(RATE_LIMIT_ERROR)],
])('fails an attempt whose handler threw an error %s, as any other', async (_, error) => {
  const env = await setUp();
  let calls = 0;
  const runtime = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'odd',
        attempts: 2,
        backoff: { delayMs: 10, jitter: 0 },
        handle: () => {
          calls += 1;
          throw error;
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_odd' });
  await env.failedRuns(1);
  expect(calls, 'both attempts').toBe(2);
  const [entry] = await env.deadLetter().list();
  expect(entry).toMatchObject({ handler: 'odd', attempts: 2 });
  expect(entry!.reason).toContain(error.message);
  const [job] = (await runtime.runQueues.of('odd').getFailed()) as { data: HandlerRunData }[];
  expect(job?.data.delivery.key).toBe('feedback.created:fb_odd');
});
