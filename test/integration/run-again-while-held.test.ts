/**
 * An operator's run again is never undone by a worker that still holds the run's earlier
 * success in its completion ledger. With ACK_REPLICAS=1 on a Redis that has no replica, a worker
 * holds every success (no replica ever confirms its marker), which is the longest it can: the
 * run started afresh must run its handler all the same.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { startAfresh } from '../../src/runs/restart.js';
import { deduplicationIdFor, type Delivery } from '../../src/webhooks/delivery.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

let env: TestWorkerEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

it('runs a completed run again while the worker still holds its first success', async () => {
  env = await createTestWorkerEnv();
  const calls: string[] = [];
  const probe = defineHandler({
    name: 'probe',
    handle: ({ delivery }) => void calls.push(delivery.key),
  });
  const worker = await env.startWorker({
    handlers: [probe],
    ackReplicas: { replicas: 1, timeoutMs: 50 },
  });
  const delivery = await env.deliver({ id: 'fb_run_again_while_held' });
  await env.completedRuns(1);
  const [job] = await worker.runQueues.of('probe').getCompleted();

  expect(await startAfresh(job!, 'completed')).toBe(true);
  await vi.waitFor(() => expect(calls).toEqual([delivery.key, delivery.key]), { timeout: 5_000 });
  // And again: each run again is a life of its own.
  await vi.waitFor(async () => expect(await job!.getState()).toBe('completed'), { timeout: 5_000 });
  expect(await startAfresh(job!, 'completed')).toBe(true);
  await vi.waitFor(() => expect(calls).toHaveLength(3), { timeout: 5_000 });
  expect(env.logs).not.toContainEqual(
    expect.objectContaining({ msg: 'handler run had completed before; not run again' }),
  );
});

it('does not run a retried run twice when a failover loses its completion, however old its delivery', async () => {
  // With ACK_REPLICAS every run asks the ledger first: a failover may have lost a completion.
  env = await createTestWorkerEnv({ dedupeTtlSeconds: 60 });
  let calls = 0;
  const fixed = defineHandler({
    name: 'fixed',
    attempts: 1,
    handle: () => {
      calls += 1;
      if (calls === 1) throw new Error('a bug, fixed since');
    },
  });
  const worker = await env.startWorker({
    handlers: [fixed],
    ackReplicas: { replicas: 1, timeoutMs: 50 },
  });
  // Received longer ago than DEDUPE_TTL_SECONDS: its failed run is still kept (30 days).
  await env.producer.enqueue({
    key: 'feedback.created:fb_retried_late',
    event: 'feedback.created',
    receivedAt: new Date(Date.now() - 2 * 60_000).toISOString(),
    record: { id: 'fb_retried_late' },
  });
  await env.failedRuns(1);
  const [failed] = await env.deadLetter().list();
  expect(await env.deadLetter().retry(failed!.id)).toBe(true);
  await env.completedRuns(1);
  expect(calls).toBe(2);

  // A failover that lost the completion: the run is back, waiting, in the same life.
  const job = await worker.runQueues.of('fixed').getJob(failed!.id);
  await job!.retry('completed');
  await vi.waitFor(
    () =>
      expect(env!.logs).toContainEqual(
        expect.objectContaining({ msg: 'handler run had completed before; not run again' }),
      ),
    { timeout: 5_000 },
  );
  expect(calls, 'the handler ran once after the retry').toBe(2);
});

it('runs the retry of a delivery received again after DEDUPE_TTL_SECONDS, though its first was retried too', async () => {
  env = await createTestWorkerEnv({ dedupeTtlSeconds: 60 });
  let calls = 0;
  let failNext = true;
  const flaky = defineHandler({
    name: 'flaky',
    attempts: 1,
    handle: () => {
      calls += 1;
      if (!failNext) return;
      failNext = false;
      throw new Error('a bug, fixed since');
    },
  });
  await env.startWorker({ handlers: [flaky], ackReplicas: { replicas: 1, timeoutMs: 50 } });
  const delivery: Delivery = {
    key: 'feedback.created:fb_sent_twice',
    event: 'feedback.created',
    receivedAt: new Date(Date.now() - 2 * 60_000).toISOString(),
    record: { id: 'fb_sent_twice' },
  };
  const failAndRetry = async (failed: number) => {
    await env!.failedRuns(failed);
    const [entry] = await env!.deadLetter().list();
    expect(await env!.deadLetter().retry(entry!.id)).toBe(true);
  };
  await env.producer.enqueue(delivery);
  await failAndRetry(1);
  await env.completedRuns(1);
  expect(calls).toBe(2);

  // DEDUPE_TTL_SECONDS later the sender sends it again: a new delivery, whose run fails too.
  await env.deliveries.removeDeduplicationKey(deduplicationIdFor(delivery.key));
  failNext = true;
  expect(
    (await env.producer.enqueue({ ...delivery, receivedAt: new Date().toISOString() })).status,
  ).toBe('queued');
  await failAndRetry(1);
  await env.completedRuns(2);
  expect(calls, "the second delivery's retry ran its handler").toBe(4);
});
