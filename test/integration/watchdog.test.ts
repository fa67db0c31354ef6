/**
 * The worker watchdog on a real BullMQ worker: one that stops taking jobs while jobs wait is
 * recreated and the jobs run; one that is busy, or has nothing to take, is left alone.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, expect, inject, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { watchWorker, type WatchedWorker } from '../../src/worker/watchdog.js';

const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

function setUp(processor: (job: Job) => Promise<unknown>, concurrency = 2) {
  const prefix = `watchdog-${randomUUID().slice(0, 8)}`;
  const shared = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const queue = new Queue('jobs', { connection: shared, prefix });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'warn',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const created: Worker[] = [];
  /** Each created worker's connection, as the watchdog gave it. */
  const connections: Redis[] = [];
  let restarts = 0;
  const watched: WatchedWorker<unknown> = watchWorker({
    queue,
    processor,
    concurrency,
    stuckAfterMs: 300,
    logger,
    restarted: () => void (restarts += 1),
    connection: shared,
    create: (tracked, own) => {
      connections.push(own as Redis);
      const worker = new Worker('jobs', tracked, { connection: own, prefix, concurrency });
      created.push(worker);
      return worker;
    },
  });
  cleanup.push(
    async () => shared.disconnect(),
    () => queue.close(),
    () => watched.close(),
  );
  return { queue, watched, created, connections, shared, lines, restarts: () => restarts };
}

it('recreates a worker that takes no job while jobs wait, and the jobs run', async () => {
  const done: string[] = [];
  const { queue, watched, created, lines, restarts } = setUp(async (job) => {
    done.push(job.name);
  });
  await queue.add('before', {});
  await vi.waitFor(() => expect(done, 'the first job').toEqual(['before']), { timeout: 5_000 });

  // Stands in for a worker left without its blocking connection after a failover: it runs, and
  // takes nothing. (A fetch already under way when it pauses may still bring one job.)
  await created[0]!.pause(true);
  await queue.add('mid', {});
  await queue.add('after', {});
  await vi.waitFor(
    () => expect(done.sort(), 'the jobs after the restart').toEqual(['after', 'before', 'mid']),
    { timeout: 10_000 },
  );
  expect(restarts()).toBe(1);
  expect(created).toHaveLength(2);
  expect(watched.worker).toBe(created[1]);
  expect(lines).toContainEqual(
    expect.objectContaining({ msg: 'worker took no job while jobs waited: recreating it' }),
  );
});

it('leaves a busy worker alone while jobs wait for it, and an idle one with nothing to do', async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const done: string[] = [];
  const { queue, restarts } = setUp(async (job) => {
    if (job.name === 'long') await released;
    done.push(job.name);
  }, 1);
  await queue.add('long', {});
  await queue.add('next', {});
  // Several watchdog bounds pass with a job waiting behind the running one.
  await vi.waitFor(
    async () => {
      expect(await queue.getWaitingCount(), 'a job waiting behind the long one').toBe(1);
      expect(await queue.getActiveCount()).toBe(1);
    },
    { timeout: 5_000 },
  );
  // Proving that nothing happens takes time passing: four bounds of 300 ms.
  await sleep(1_200);
  expect(restarts()).toBe(0);
  release();
  await vi.waitFor(() => expect(done, 'both jobs').toEqual(['long', 'next']), { timeout: 5_000 });
  await sleep(1_200);
  expect(restarts()).toBe(0);
});

it('leaves a worker alone while a global concurrency set in the dashboard holds jobs back', async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const done: string[] = [];
  // Room for two at once in this worker; the queue allows one at a time across all workers.
  const { queue, restarts, lines } = setUp(async (job) => {
    if (job.name === 'long') await released;
    done.push(job.name);
  }, 2);
  cleanup.push(async () => release());
  await queue.setGlobalConcurrency(1);
  await queue.add('long', {});
  await queue.add('next', {});
  await queue.add('last', {});
  await vi.waitFor(
    async () => {
      expect(await queue.getActiveCount(), 'the long job').toBe(1);
      expect(await queue.getWaitingCount(), 'jobs BullMQ holds back').toBe(2);
    },
    { timeout: 5_000 },
  );
  // Proving that nothing happens takes time passing: four bounds of 300 ms.
  await sleep(1_200);
  expect(restarts(), 'workers recreated').toBe(0);
  expect(lines).toEqual([]);
  release();
  await vi.waitFor(() => expect(done, 'every job').toEqual(['long', 'next', 'last']), {
    timeout: 5_000,
  });
});

it('leaves a worker alone while a rate limit holds jobs back', async () => {
  const done: string[] = [];
  const { queue, restarts, lines } = setUp(async (job) => void done.push(job.name));
  // One job a minute: the first runs, the others wait for the window to end.
  await queue.setGlobalRateLimit(1, 60_000);
  await queue.add('first', {});
  await queue.add('second', {});
  await queue.add('third', {});
  await vi.waitFor(
    async () => {
      expect(done, 'the first job').toEqual(['first']);
      expect(await queue.getWaitingCount(), 'jobs BullMQ holds back').toBe(2);
    },
    { timeout: 5_000 },
  );
  await sleep(1_200);
  expect(restarts(), 'workers recreated').toBe(0);
  expect(lines).toEqual([]);
  expect(done).toEqual(['first']);
});

it("lets a replaced worker finish its job, then closes only that worker's connection", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const done: string[] = [];
  const { queue, created, connections, shared, restarts } = setUp(async (job) => {
    if (job.name === 'long') await released;
    done.push(job.name);
  });
  cleanup.push(async () => release()); // first: the long job ends with the test
  await queue.add('long', {});
  await vi.waitFor(async () => expect(await queue.getActiveCount(), 'the long job').toBe(1), {
    timeout: 5_000,
  });
  // A worker that takes nothing more, while its long job keeps it from closing.
  await created[0]!.pause(true);
  await queue.add('mid', {});
  await queue.add('after', {});
  await vi.waitFor(
    () => expect(done.sort(), 'the jobs after the restart').toEqual(['after', 'mid']),
    { timeout: 10_000 },
  );
  expect(restarts()).toBe(1);

  // Proving that nothing is cut off takes time passing: longer than a replaced worker is given
  // before it is looked at again (5 s). Its job still runs on it, on its own connection.
  await sleep(6_000);
  expect(connections[0]!.status, "the replaced worker's connection, while its job runs").toBe(
    'ready',
  );
  expect(shared.status, "the process's connection").toBe('ready');

  release();
  await vi.waitFor(
    () =>
      expect(connections[0]!.status, "the replaced worker's connection, once closed").toBe('end'),
    { timeout: 10_000 },
  );
  expect(
    done.filter((name) => name === 'long'),
    'the long job, once',
  ).toHaveLength(1);
  expect(shared.status, "the process's connection").toBe('ready');
  await expect(queue.getWaitingCount(), 'a queue call').resolves.toBeTypeOf('number');
  await queue.add('later', {});
  await vi.waitFor(() => expect(done, 'a job after the restart').toContain('later'), {
    timeout: 5_000,
  });
}, 30_000);
