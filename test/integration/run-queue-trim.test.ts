/**
 * A handler's queue is kept within its retention's age even when no run of it finishes any more
 * (BullMQ trims a queue only as its jobs finish): a worker trims the queues of handlers no worker
 * has, their finished runs only, and never before a run's deduplication marker has expired.
 */
import { expect, it, onTestFinished, vi } from 'vitest';
import type { JobRetention } from '../../src/queue/deliveries-queue.js';
import { createLogger } from '../../src/logger.js';
import { addRuns, createRunQueues } from '../../src/runs/run-queues.js';
import { trimRunQueues } from '../../src/runs/trim-run-queues.js';
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
    (line) => line.queue === 'runs-gone' && String(line.msg).startsWith('removed finished runs'),
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
  const removed = await trimRunQueues([queue], {
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
    expect(await trimRunQueues([queue], options), 'runs removed').toBe(0);
  }
  expect(await env.connection.xlen(events), "the queue's events").toBe(0);
});
