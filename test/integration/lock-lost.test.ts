/**
 * A run whose job lost its lock while its handler ran (an event loop held past the lock, a lock
 * that expired while Redis was slow): BullMQ refuses its completion ("Missing lock"), and the
 * stalled check hands the job to a worker again at once, not a lock's time later. Its success
 * must be in Redis by then, or the handler runs twice.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { runQueueName, runSuccessKey, succeededMarkerKey } from '../../src/runs/run-queues.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setUp(): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  return env;
}

it('writes the success of a run whose completion BullMQ refused for a lost lock at once', async () => {
  const env = await setUp();
  let finish!: () => void;
  const finishing = new Promise<void>((resolve) => (finish = resolve));
  cleanup.push(() => finish());
  let started = 0;
  // A lock of a minute: the ledger's own sweep (half a lock) would write the marker 30 s or more
  // after the handler returned, while the stalled check may hand the job out at once.
  const runtime = await env.startWorker({
    lockDurationMs: 60_000,
    handlers: [
      defineHandler({
        name: 'slow',
        handle: async () => {
          started += 1;
          await finishing;
        },
      }),
    ],
  });
  const delivery = await env.deliver({ id: 'fb_lock_lost' });
  await vi.waitFor(() => expect(started, 'the handler to start').toBe(1), { timeout: 5_000 });
  const queue = runtime.runQueues.of('slow');
  const [job] = await queue.getActive();
  expect(job, 'the run under way').toBeDefined();

  // The lock lost, as BullMQ's troubleshooting guide says one is: its key gone.
  await env.connection.del(`${env.prefix}:${runQueueName('slow')}:${job!.id!}:lock`);
  finish();

  const marker = succeededMarkerKey(env.prefix, runSuccessKey('slow', delivery.key));
  await vi.waitFor(
    async () => expect(await env.connection.exists(marker), "the run's success marker").toBe(1),
    { timeout: 10_000 },
  );
  expect(await job!.getState(), 'its completion was refused').toBe('active');

  // As the stalled check does with a job whose lock is gone: back to waiting, and taken again.
  await job!.moveToWait();
  await vi.waitFor(async () => expect(await queue.getCompletedCount()).toBe(1), {
    timeout: 10_000,
  });
  expect(started, 'the handler ran once').toBe(1);
}, 30_000);
