/**
 * A delivery that a failover lost before the receiver acknowledged it: the old primary stored it,
 * the worker handled it there, and the promoted replica never got it. Its sender sends it again,
 * and the receiver queues it as a new delivery job, with a new id. Within DEDUPE_TTL_SECONDS it
 * is the same delivery, and a handler that succeeded on it must not run again.
 *
 * The failover is played on one Redis: the worker waits for a replica that does not exist
 * (ACK_REPLICAS=1), so it holds every success in memory, as it does while a promoted primary has
 * no replica yet; removing the delivery's deduplication id is what the failover lost of it.
 * test/reliability/sentinel-failover.test.ts does it with a real failover, under load.
 */
import { afterEach, expect, it } from 'vitest';
import { deduplicationIdFor } from '../../src/webhooks/delivery.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

let env: TestWorkerEnv | undefined;
afterEach(() => env?.close());

it('does not run a handler again on a delivery that a failover lost after it succeeded', async () => {
  env = await createTestWorkerEnv();
  const calls: string[] = [];
  await env.startWorker({
    handlers: [
      defineHandler({ name: 'probe', handle: ({ delivery }) => void calls.push(delivery.key) }),
    ],
    ackReplicas: { replicas: 1, timeoutMs: 50 },
  });

  const delivery = await env.deliver({ id: 'fb_lost_in_failover' });
  const { key } = delivery;
  await env.completedRuns(1);
  expect(await env.deliveries.removeDeduplicationKey(deduplicationIdFor(key))).toBe(1);
  expect((await env.producer.enqueue(delivery)).status, 'sent again').toBe('queued');
  await env.completedRuns(2);

  expect(calls).toEqual([key]);
  expect(env.logs).toContainEqual(
    expect.objectContaining({
      deliveryKey: key,
      handler: 'probe',
      msg: 'handler run had completed before; not run again',
    }),
  );
});
