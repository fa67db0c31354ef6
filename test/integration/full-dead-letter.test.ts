/**
 * BullMQ drops the oldest failed jobs past a queue's retention count without a word; the worker
 * says when a dead letter is full, once a minute per queue at most.
 */
import { expect, it, vi } from 'vitest';
import { runQueueName } from '../../src/runs/run-queues.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const fullWarnings = (env: TestWorkerEnv, queue: string) =>
  env.logs.filter(
    (line) => line.queue === queue && String(line.msg).startsWith('the dead letter of queue'),
  );

it("warns once when a handler's dead letter is full and its oldest runs are dropped", async () => {
  const env = await startTestWorkerEnv();
  const broken = defineHandler({
    name: 'broken',
    attempts: 1,
    handle: () => {
      throw new Error('broken');
    },
  });
  await env.startWorker({
    handlers: [broken],
    retention: { removeOnFail: { age: 3_600, count: 2 } },
  });
  for (const id of ['one', 'two', 'three']) await env.deliver({ id });
  await env.historyHolds(3);

  const queue = runQueueName('broken');
  await vi.waitFor(() => expect(fullWarnings(env, queue)).toHaveLength(1), { timeout: 5_000 });
  expect(fullWarnings(env, queue)[0], 'the warning').toMatchObject({ level: 40, cap: 2 });
  // The third failure dropped the first: still said only once within the minute.
  expect(fullWarnings(env, queue)).toHaveLength(1);
});

it('warns when the failed routings of the deliveries queue are full', async () => {
  const env = await startTestWorkerEnv();
  await env.startWorker({ handlers: [] });
  // Jobs that are not deliveries fail their routing at once, into the dead letter.
  for (const id of ['bad-1', 'bad-2']) {
    await env.deliveries.add('feedback.created', { not: 'a delivery' } as never, {
      jobId: id,
      removeOnFail: { count: 1 },
    });
  }
  await vi.waitFor(
    () => expect(fullWarnings(env, 'deliveries')[0]).toMatchObject({ level: 40, cap: 1 }),
    { timeout: 10_000 },
  );
});
