/**
 * Issue 21's defects, one test each, every one written to fail on the design before it (a run's
 * first attempt made inside its routing job) and to hold on the design of one executor. The
 * watchdog's zombie (defect 4) went with the watchdog: BullMQ 6.7 reconnects a worker by itself
 * (reliability scenario 14). A worker process that exits on SIGTERM whatever its handlers do is
 * in test/e2e/worker-shutdown.test.ts.
 *
 * Where a defect needs Redis to refuse a write (the issue saw an OOM error while a run was
 * queued), the worker connects as a Redis user of the test's own that may write every key but
 * the run of one handler: a real Redis refusing a real write, for that run only.
 */
import { randomUUID } from 'node:crypto';
import { Queue, UnrecoverableError } from 'bullmq';
import { afterEach, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createLogger } from '../../src/logger.js';
import { createDeliveryQueue } from '../../src/queue/deliveries-queue.js';
import {
  createProducerConnection,
  createWorkerConnection,
  waitForRedis,
} from '../../src/queue/redis.js';
import { runQueueName, runSuccessKey } from '../../src/runs/run-queues.js';
import { startWorkerRuntime } from '../../src/worker/runtime.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { defineHandler, type Handler } from '../../src/worker/handler.js';
import {
  createTestWorkerEnv,
  type TestWorkerEnv,
  type TestWorkerEnvOptions,
} from '../helpers/test-worker.js';
import { settlesBefore } from '../helpers/hang-guard.js';
import {
  refusingTheRunOf as refusingUser,
  type RefusingUser,
} from '../helpers/refusing-redis-user.js';
import { startRedisServer } from '../helpers/redis-server.js';

/** Run after each test, last added first. */
const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setUp(options?: TestWorkerEnvOptions): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv(options);
  cleanup.push(() => env.close());
  return env;
}

/** A promise a handler waits on, settled at the latest when the test ends. */
function latch(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  cleanup.push(() => open());
  return { wait, open };
}

const fast = { delayMs: 10, jitter: 0 };

/** A delivery of a record with this id, as the receiver queues it. */
function delivery(id: string): Delivery {
  return {
    key: `feedback.created:${id}`,
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id },
  };
}

/** A Redis user that refuses to write `handler`'s runs, removed after the workers have closed. */
async function refusingTheRunOf(env: TestWorkerEnv, handler: string): Promise<RefusingUser> {
  const refusing = await refusingUser(env.prefix, handler);
  cleanup.unshift(() => refusing.remove());
  return refusing;
}

/** A handler's runs queue of the test, to read. */
function runsQueue(env: TestWorkerEnv, handler: string): Queue {
  const queue = new Queue(runQueueName(handler), {
    connection: env.connection,
    prefix: env.prefix,
  });
  cleanup.push(() => queue.close());
  return queue;
}

/** A queue's jobs not yet finished. */
async function unfinished(queue: Queue) {
  const { waiting, active, delayed } = await queue.getJobCounts();
  return { waiting, active, delayed };
}

const NONE = { waiting: 0, active: 0, delayed: 0 };

it('gives a delivery received again after DEDUPE_TTL_SECONDS runs of its own, with all their retries', async () => {
  const env = await setUp({ dedupeTtlSeconds: 1 });
  let calls = 0;
  await env.startWorker({
    handlers: [
      defineHandler({
        name: 'flaky',
        attempts: 3,
        backoff: fast,
        handle: () => {
          calls += 1;
          if (calls === 1) throw new UnrecoverableError('the first call gives up at once');
          throw new Error(`call ${calls} failed`);
        },
      }),
    ],
  });
  const delivery: Delivery = {
    key: 'feedback.created:fb_again',
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id: 'fb_again' },
  };
  expect((await env.producer.enqueue(delivery)).status).toBe('queued');
  await env.failedRuns(1);
  expect(calls).toBe(1);

  // The key is forgotten after its TTL, so the same delivery is new again.
  await vi.waitFor(
    async () => expect(await env.producer.find(delivery.key), 'the key forgotten').toBeUndefined(),
    { timeout: 5_000 },
  );
  const again = { ...delivery, receivedAt: new Date().toISOString() };
  expect((await env.producer.enqueue(again)).status).toBe('queued');
  // 1 call for the first delivery, then all 3 attempts of the second one's run.
  await vi.waitFor(() => expect(calls, 'handler calls').toBe(4), { timeout: 5_000 });
  await env.failedRuns(2);
  expect(calls).toBe(4);
});

it('leaves the runs of a handler a worker lacks to a worker that has it, instead of the dead letter', async () => {
  const env = await setUp();
  const records = ['fb_r1', 'fb_r2', 'fb_r3', 'fb_r4'];
  const aCalls: string[] = [];
  const bFailedOnce = new Set<string>();
  const bDone = new Set<string>();
  const a = defineHandler({ name: 'a', handle: ({ record }) => void aCalls.push(record.id) });
  // Fails its first attempt on each record; its retry is due well after this worker is closed.
  const b = defineHandler({
    name: 'b',
    attempts: 3,
    backoff: { delayMs: 1_500, jitter: 0 },
    handle: ({ record }) => {
      if (!bFailedOnce.has(record.id)) {
        bFailedOnce.add(record.id);
        throw new Error('b: not yet');
      }
      bDone.add(record.id);
    },
  });

  // The new version routes every delivery: a's runs complete, b's first attempts fail.
  const newer = await env.startWorker({ handlers: [a, b] });
  for (const id of records) await env.deliver({ id });
  await vi.waitFor(
    () => {
      expect(aCalls.sort(), "a's runs").toEqual(records);
      expect([...bFailedOnce].sort(), "b's first attempts").toEqual(records);
    },
    { timeout: 5_000 },
  );
  await newer.close(1_000);
  // Their retries are due now.
  const bRuns = runsQueue(env, 'b');
  await bRuns.promoteJobs();

  // Only the older version runs now: it takes deliveries and a's runs, and never one of b's,
  // whose queue it does not consume. They wait there, spending nothing, and so does the run of b
  // it adds for the new delivery (a worker had b a moment ago).
  const older = await env.startWorker({ handlers: [a] });
  await env.deliver({ id: 'fb_r5' });
  await vi.waitFor(() => expect(aCalls, "the older worker's run of a").toContain('fb_r5'), {
    timeout: 5_000,
  });
  expect(await unfinished(bRuns), "b's runs, waiting").toEqual({
    ...NONE,
    waiting: records.length + 1,
  });
  await older.close(1_000);
  const inDeadLetter = (await env.deadLetter().list()).filter((entry) => entry.handler === 'b');
  expect(inDeadLetter, "b's runs in the dead letter").toEqual([]);

  // A worker of the new version finishes every one of them.
  await env.startWorker({ handlers: [a, b] });
  await vi.waitFor(
    () => expect([...bDone].sort(), "b's runs completed").toEqual([...records, 'fb_r5']),
    { timeout: 5_000 },
  );
  expect(await env.deadLetter().count()).toBe(0);
  expect(aCalls).toHaveLength(records.length + 1);
});

it("resolves a worker's close though a handler ignores its signal, and another worker completes the run", async () => {
  const env = await setUp();
  const stuck = latch();
  let started = false;
  const stubborn = await env.startWorker({
    lockDurationMs: 1_000,
    handlers: [
      defineHandler({
        name: 'stubborn',
        // Ignores its AbortSignal, and waits for the test's end.
        handle: async () => {
          started = true;
          await stuck.wait;
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_stubborn' });
  await vi.waitFor(() => expect(started, 'the handler to start').toBe(true), { timeout: 5_000 });

  // A generous bound, far above the shutdown timeout and the wait before abandoning.
  expect(await settlesBefore(stubborn.close(500), 15_000), "the worker's close").toBe(true);

  // Its run was abandoned, not lost: once its lock expires another worker completes it.
  let completedElsewhere = 0;
  const other = await env.startWorker({
    lockDurationMs: 1_000,
    handlers: [defineHandler({ name: 'stubborn', handle: () => void (completedElsewhere += 1) })],
  });
  await vi.waitFor(
    async () => {
      expect(completedElsewhere, 'the run on the other worker').toBe(1);
      expect(await other.runQueues.of('stubborn').getCompletedCount(), 'the run completed').toBe(1);
    },
    { timeout: 10_000 },
  );
}, 30_000);

it('does not run a completed handler again when a failed routing job is retried from the dead letter', async () => {
  const env = await setUp();
  const refusing = await refusingTheRunOf(env, 'b');
  let aCalls = 0;
  let bCalls = 0;
  const handlers: Handler[] = [
    defineHandler({ name: 'a', handle: () => void (aCalls += 1) }),
    // Fails its first attempt, so the old design queued its retry: the write Redis refuses.
    defineHandler({
      name: 'b',
      attempts: 3,
      backoff: fast,
      handle: () => {
        bCalls += 1;
        if (bCalls === 1) throw new Error('b: not yet');
      },
    }),
  ];
  await env.startWorker({ handlers, redisUrl: refusing.url });
  // Queued with one attempt, as versions before routing retried did: it fails at once.
  const routing = await env.deliveries.add('feedback.created', delivery('fb_refused'), {
    jobId: randomUUID(),
  });

  // a completes; queueing b's run is refused, and the routing job fails into the dead letter.
  await vi.waitFor(
    async () => {
      expect(await env.deliveries.getFailedCount(), 'the routing job failed').toBe(1);
      expect(env.logs, "a's run completed").toContainEqual(
        expect.objectContaining({ msg: 'handler run', handler: 'a', outcome: 'completed' }),
      );
    },
    { timeout: 5_000 },
  );
  expect(aCalls).toBe(1);
  expect((await env.deliveries.getFailed())[0]?.failedReason, 'why').toMatch(/NOPERM|can't access/);

  await refusing.allow();
  expect(await env.deadLetter().retry(routing.id!), 'the retry').toBe(true);
  // Routed again: every run of the delivery finishes, b's included.
  const handlerRuns = runsQueue(env, 'b');
  await vi.waitFor(
    async () => {
      expect(await env.deliveries.getCompletedCount(), 'the routing job completed').toBe(1);
      expect(await unfinished(env.deliveries), 'deliveries to route').toEqual(NONE);
      expect(await unfinished(handlerRuns), 'runs to make').toEqual(NONE);
      expect(bCalls, "b's run completed").toBeGreaterThanOrEqual(2);
    },
    { timeout: 5_000 },
  );
  expect(await env.deadLetter().count(), 'the dead letter').toBe(0);
  expect(aCalls, 'calls of a, which had completed').toBe(1);
});

it('tries routing again by itself when Redis refuses to add a run, and runs each handler once', async () => {
  const env = await setUp();
  const refusing = await refusingTheRunOf(env, 'b');
  const calls = { a: 0, b: 0 };
  await env.startWorker({
    redisUrl: refusing.url,
    handlers: [
      defineHandler({ name: 'a', handle: () => void (calls.a += 1) }),
      defineHandler({ name: 'b', handle: () => void (calls.b += 1) }),
    ],
  });
  await env.deliver({ id: 'fb_refused_once' });
  // Its first attempt failed on b's run; its next waits out the backoff.
  await vi.waitFor(
    async () => expect(await env.deliveries.getDelayedCount(), 'routing to be retried').toBe(1),
    { timeout: 5_000 },
  );
  await refusing.allow();
  await env.completedRuns(2, 10_000);
  expect(await env.deliveries.getCompletedCount(), 'the routing job completed').toBe(1);
  expect(await env.deadLetter().count(), 'the dead letter').toBe(0);
  expect(calls).toEqual({ a: 1, b: 1 });
});

it('closes a worker whose Redis is gone, and logs at error the runs it could not record', async () => {
  const redis = await startRedisServer();
  cleanup.push(() => redis.stop());
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const connection = createWorkerConnection(redis.url, logger);
  const producerConnection = createProducerConnection(redis.url, logger);
  cleanup.push(
    () => connection.disconnect(),
    () => producerConnection.disconnect(),
  );
  await waitForRedis(connection, redis.url);
  const prefix = `gone-${randomUUID().slice(0, 8)}`;
  const producer = createDeliveryQueue({
    connection: producerConnection,
    prefix,
    dedupeTtlSeconds: 60,
  });
  producer.queue.on('error', () => undefined); // Redis goes away on purpose
  cleanup.push(() => producer.close());
  const quick = latch();
  const stuck = latch();
  const started = new Set<string>();
  const runtime = await startWorkerRuntime({
    connection,
    prefix,
    logger,
    api: createApiClient({ baseUrl: undefined, token: undefined }),
    dedupeTtlSeconds: 60,
    handlers: [
      // Returns once Redis is gone: its completion cannot reach Redis.
      defineHandler({
        name: 'quick',
        handle: async () => {
          started.add('quick');
          await quick.wait;
        },
      }),
      // Ignores its AbortSignal, and waits for the test's end.
      defineHandler({
        name: 'stuck',
        handle: async () => {
          started.add('stuck');
          await stuck.wait;
        },
      }),
    ],
  });
  await producer.enqueue({
    key: 'feedback.created:fb_gone',
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id: 'fb_gone' },
  });
  await vi.waitFor(() => expect([...started].sort(), 'both runs').toEqual(['quick', 'stuck']), {
    timeout: 5_000,
  });

  await redis.shutdown();
  quick.open();
  // A generous bound, far above the shutdown timeout, the wait before abandoning and the waits
  // for Redis at close: it guards against a hang, it times nothing.
  expect(await settlesBefore(runtime.close(200), 25_000), "the worker's close").toBe(true);
  expect(lines).toContainEqual(
    expect.objectContaining({
      level: 50,
      runs: [runSuccessKey('quick', 'feedback.created:fb_gone')],
    }),
  );
}, 40_000);

it("keeps a run's attempt inside a job, and records its failure, when queueing its sibling fails", async () => {
  const env = await setUp();
  const refusing = await refusingTheRunOf(env, 'a');
  const slow = latch();
  let bCalls = 0;
  let bCompleted = false;
  const handlers: Handler[] = [
    defineHandler({
      name: 'a',
      handle: () => {
        throw new UnrecoverableError('a: gives up at once');
      },
    }),
    defineHandler({
      name: 'b',
      attempts: 2,
      backoff: fast,
      handle: async () => {
        bCalls += 1;
        if (bCalls === 1) {
          await slow.wait;
          throw new Error('b: slow, then failed');
        }
        bCompleted = true;
      },
    }),
  ];
  const runtime = await env.startWorker({ handlers, redisUrl: refusing.url });
  // Queued with one attempt, as versions before routing retried did: it fails at once.
  await env.deliveries.add('feedback.created', delivery('fb_siblings'), { jobId: randomUUID() });

  // Queueing a's run fails at once and fails the routing job, while b's attempt is under way.
  await vi.waitFor(
    async () => {
      expect(bCalls, "b's attempt started").toBe(1);
      expect(await env.deliveries.getFailedCount(), 'the routing job failed').toBe(1);
    },
    { timeout: 5_000 },
  );
  expect((await env.deliveries.getFailed())[0]?.failedReason, 'why').toMatch(/NOPERM|can't access/);
  const [routing, runs] = await Promise.all([
    env.deliveries.getActiveCount(),
    runtime.runQueues.of('b').getActiveCount(),
  ]);
  expect(routing + runs, "jobs active while b's attempt runs").toBe(1);

  // b's failure is recorded: its run is retried, and completes.
  const handlerRuns = runsQueue(env, 'b');
  slow.open();
  await vi.waitFor(
    async () => {
      expect(bCompleted, "b's second attempt").toBe(true);
      expect(await unfinished(handlerRuns), "b's run finished").toEqual(NONE);
    },
    { timeout: 5_000 },
  );
  expect(bCalls).toBe(2);
  expect(env.logs).toContainEqual(
    expect.objectContaining({ msg: 'handler run failed; will retry', handler: 'b' }),
  );
});
