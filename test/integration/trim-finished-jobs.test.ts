/**
 * A handler's queue is kept within its retention's age even when no run of it finishes any more
 * (BullMQ trims a queue only as its jobs finish): a worker trims the queues of handlers no worker
 * has, their finished runs only, and never before a run's deduplication marker has expired.
 */
import { expect, it, onTestFinished, vi } from 'vitest';
import type { JobRetention } from '../../src/queue/deliveries-queue.js';
import { createLogger } from '../../src/logger.js';
import { announceHandlers } from '../../src/runs/handler-roster.js';
import { addRuns, createRunQueues } from '../../src/runs/run-queues.js';
import { trimFinishedJobs } from '../../src/queue/trim-finished-jobs.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startTestWorkerEnv } from '../helpers/test-worker.js';

/** Finished runs are kept a second: the test waits that long, not a day. */
const ONE_SECOND: JobRetention = {
  removeOnComplete: { age: 1, count: 100 },
  removeOnFail: { age: 1, count: 100 },
};

/** A handler that fails the deliveries whose record id starts with `fail`. */
const gone = defineHandler({
  name: 'gone',
  attempts: 1,
  handle: ({ record }) => {
    if (record.id.startsWith('fail')) throw new Error('gone: broken');
  },
});
const kept = defineHandler({ name: 'kept', handle: () => undefined });

it("removes a removed handler's finished runs past their age, and keeps its waiting ones", async () => {
  const env = await startTestWorkerEnv({ dedupeTtlSeconds: 1 });
  const first = await env.startWorker({ handlers: [gone, kept], retention: ONE_SECOND });
  await env.deliver({ id: 'ok' });
  await env.deliver({ id: 'fail' });
  await env.historyHolds(2);
  await first.close(1_000);

  // The next release has no `gone`. A delivery routed while the roster still counts the first
  // worker as running gets a run of `gone` that waits for a worker that has it.
  const next = await env.startWorker({ handlers: [kept], retention: ONE_SECOND, trimEveryMs: 50 });
  await env.deliver({ id: 'waits' });
  const queue = next.runQueues.of('gone');
  await vi.waitFor(
    async () =>
      expect(await queue.getJobCounts('completed', 'failed', 'waiting')).toEqual({
        completed: 0,
        failed: 0,
        waiting: 1,
      }),
    { timeout: 10_000, interval: 50 },
  );
  const said = env.logs.filter(
    (line) => line.queue === 'runs-gone' && String(line.msg).startsWith('removed finished jobs'),
  );
  expect(
    said
      .map(({ state, removed }) => ({ state, removed }))
      .sort((a, b) => String(a.state).localeCompare(String(b.state))),
  ).toEqual([
    { state: 'completed', removed: 1 },
    { state: 'failed', removed: 1 },
  ]);
});

it('removes no finished run whose deduplication marker still counts: routing again adds no run', async () => {
  const env = await startTestWorkerEnv({ dedupeTtlSeconds: 3_600 });
  const worker = await env.startWorker({ handlers: [gone], retention: ONE_SECOND });
  await env.deliver({ id: 'ok' });
  await env.historyHolds(1);
  await worker.close(1_000);
  const runQueues = createRunQueues(env.connection, env.prefix);
  onTestFinished(() => runQueues.close());
  const queue = runQueues.of('gone');
  const [run] = await queue.getCompleted();
  // Past its retention's age, well within DEDUPE_TTL_SECONDS.
  await vi.waitFor(() => expect(Date.now() - run!.finishedOn!).toBeGreaterThan(1_000), {
    timeout: 5_000,
    interval: 50,
  });

  const events = `${env.prefix}:${queue.name}:events`;
  const eventsBefore = await env.connection.xlen(events);
  const removed = await trimFinishedJobs([queue], {
    retention: ONE_SECOND,
    dedupeTtlSeconds: env.dedupeTtlSeconds,
    logger: createLogger({ level: 'info', destination: { write: () => undefined } }),
  });
  expect(removed, 'runs removed').toBe(0);
  expect(await env.connection.xlen(events), "the queue's events").toBe(eventsBefore);

  // Routing the delivery again (a crash before its job completed, or a retry) adds nothing.
  const deliveryJobId = run!.id!.slice(0, run!.id!.lastIndexOf('.gone'));
  await addRuns(
    runQueues,
    { deliveryJobId, delivery: run!.data.delivery },
    [{ handler: 'gone', attempts: 1 }],
    { dedupeTtlSeconds: env.dedupeTtlSeconds, retention: ONE_SECOND },
  );
  expect(await queue.getJobCounts('completed', 'waiting')).toEqual({ completed: 1, waiting: 0 });
});

it("adds nothing to a queue's event stream in a pass with nothing to remove", async () => {
  const env = await startTestWorkerEnv({ dedupeTtlSeconds: 1 });
  const runQueues = createRunQueues(env.connection, env.prefix);
  onTestFinished(() => runQueues.close());
  // A retired handler's queue: no job is added to it any more, and so nothing trims its stream.
  const queue = runQueues.of('retired');
  const events = `${env.prefix}:${queue.name}:events`;
  const options = {
    retention: ONE_SECOND,
    dedupeTtlSeconds: env.dedupeTtlSeconds,
    logger: createLogger({ level: 'info', destination: { write: () => undefined } }),
  };
  for (let pass = 0; pass < 3; pass += 1) {
    expect(await trimFinishedJobs([queue], options), 'runs removed').toBe(0);
  }
  expect(await env.connection.xlen(events), "the queue's events").toBe(0);
});

it('removes an old routed delivery while none finishes, and keeps waiting, delayed and recently failed ones', async () => {
  const env = await startTestWorkerEnv();
  const router = await env.startWorker({ handlers: [] });
  await env.deliver({ id: 'routed' });
  const broken = await env.deliveries.add('feedback.created', { not: 'a delivery' } as never);
  await vi.waitFor(
    async () =>
      expect(await env.deliveries.getJobCounts('completed', 'failed')).toEqual({
        completed: 1,
        failed: 1,
      }),
    { timeout: 10_000, interval: 50 },
  );
  const [routed] = await env.deliveries.getCompleted();
  await router.close(1_000);
  const waiting = await env.deliver({ id: 'waits' });
  const delayed = await env.deliveries.add('feedback.created', {} as never, { delay: 3_600_000 });
  // No delivery is routed from here on: only the worker's pass can remove one.
  await env.deliveries.pause();

  // Any finished job is past a retention of no age and a deduplication marker of no life; failed
  // ones are kept an hour.
  await env.startWorker({
    handlers: [],
    dedupeTtlSeconds: 0,
    deliveryRetention: { removeOnComplete: { age: 0 }, removeOnFail: { age: 3_600 } },
    trimEveryMs: 50,
  });
  await vi.waitFor(
    () =>
      expect(env.logs).toContainEqual(
        expect.objectContaining({ queue: 'deliveries', state: 'completed', removed: 1 }),
      ),
    { timeout: 10_000, interval: 50 },
  );
  expect(await env.deliveries.getJob(routed!.id!), 'the routed delivery').toBeUndefined();
  expect(await env.deliveries.getJobState(broken.id!)).toBe('failed');
  expect(await env.deliveries.getJobState(delayed.id!)).toBe('delayed');
  expect(await env.producer.find(waiting.key), 'the waiting delivery').toBeDefined();
});

it('keeps a finished delivery while its deduplication marker counts: `clean` would remove the marker', async () => {
  const env = await startTestWorkerEnv();
  const router = await env.startWorker({ handlers: [] });
  const first = await env.deliver({ id: 'once' });
  await env.historyHolds(1);
  await router.close(1_000);
  const noAge: JobRetention = { removeOnComplete: { age: 0 }, removeOnFail: { age: 0 } };
  const silent = createLogger({ level: 'info', destination: { write: () => undefined } });

  const trim = { retention: noAge, dedupeTtlSeconds: env.dedupeTtlSeconds, logger: silent };
  expect(await trimFinishedJobs([env.deliveries], trim), 'deliveries removed').toBe(0);
  expect(await env.producer.enqueue(first), 'sent again').toMatchObject({ status: 'duplicate' });

  // What the grace is for: BullMQ's `clean` takes the deduplication marker with the job.
  expect(await trimFinishedJobs([env.deliveries], { ...trim, dedupeTtlSeconds: 0 })).toBe(1);
  expect(await env.producer.enqueue(first), 'sent again').toMatchObject({ status: 'queued' });
});

it('waits at close for the trim pass under way to finish, before its queues close', async () => {
  const env = await startTestWorkerEnv();
  const first = await env.startWorker({ handlers: [kept] });
  await env.deliver({ id: 'ok' });
  await env.historyHolds(1);
  await first.close(1_000);
  // Retired handlers' queues, read after `deliveries` and before `kept`'s (sorted by name): a
  // pass goes on for hundreds of Redis round trips after it removed the delivery, long after a
  // close that does not wait for it has returned (a race it would lose, not a sure failure).
  const retired = Array.from({ length: 120 }, (_, i) => ({ name: `idle-${i}`, attempts: 1 }));
  await announceHandlers(env.connection, env.prefix, retired, { id: 'gone', runningForMs: 1 });
  const noAge: JobRetention = { removeOnComplete: { age: 0 }, removeOnFail: { age: 0 } };
  const passStarted = env.logged((line) => line.queue === 'deliveries' && line.removed === 1);

  const worker = await env.startWorker({
    handlers: [],
    dedupeTtlSeconds: 0,
    retention: noAge,
    deliveryRetention: noAge,
    trimEveryMs: 50,
  });
  await passStarted;
  await worker.close(1_000);
  expect(env.logs, "the pass reached `kept`'s queue").toContainEqual(
    expect.objectContaining({ queue: 'runs-kept', state: 'completed', removed: 1 }),
  );
  expect(env.logs.filter((line) => line.msg === 'could not trim the queues')).toEqual([]);
});
