/**
 * A delivery that a failover lost before the receiver acknowledged it: the old primary stored it,
 * the worker handled it there, and the promoted replica never got it. Its sender sends it again,
 * and the receiver queues it as a new delivery job, with a new id. Within DEDUPE_TTL_SECONDS it
 * is the same delivery, and a handler that succeeded on it must not run again, whether the
 * worker still holds the success in memory, has let it go (its marker replicated), or is another
 * worker.
 *
 * The failover's loss is played by removing the delivery's deduplication id, which is what the
 * promoted replica lacks; test/reliability/sentinel-failover.test.ts does it with a real failover,
 * under load.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { runSuccessKey, succeededMarkerKey } from '../../src/runs/run-queues.js';
import { deduplicationIdFor, type Delivery } from '../../src/webhooks/delivery.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startPrimaryWithReplica } from '../helpers/redis-topologies.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setUp(redisUrl?: string): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv(redisUrl ? { redisUrl } : {});
  cleanup.push(() => env.close());
  return env;
}

/** The failover forgets the delivery; its sender sends it again, and it is queued anew. */
async function sendAgain(env: TestWorkerEnv, delivery: Delivery): Promise<void> {
  expect(await env.deliveries.removeDeduplicationKey(deduplicationIdFor(delivery.key))).toBe(1);
  expect((await env.producer.enqueue(delivery)).status, 'sent again').toBe('queued');
}

function probe(calls: string[]) {
  return defineHandler({ name: 'probe', handle: ({ delivery }) => void calls.push(delivery.key) });
}

it('does not run a handler again while the worker holds its success (no replica to confirm it)', async () => {
  const env = await setUp();
  const calls: string[] = [];
  await env.startWorker({ handlers: [probe(calls)], ackReplicas: { replicas: 1, timeoutMs: 50 } });

  const delivery = await env.deliver({ id: 'fb_lost_in_failover' });
  await env.completedRuns(1);
  await sendAgain(env, delivery);
  await env.completedRuns(2);

  expect(calls).toEqual([delivery.key]);
  expect(env.logs).toContainEqual(
    expect.objectContaining({
      deliveryKey: delivery.key,
      handler: 'probe',
      msg: 'handler run had completed before; not run again',
    }),
  );
});

it('does not run it again once the success is on the replica, nor on another worker', async () => {
  const redis = await startPrimaryWithReplica();
  cleanup.push(() => redis.stop());
  const env = await setUp(redis.url);
  const calls: string[] = [];
  const acks = { replicas: 1, timeoutMs: 1_000 };
  const first = await env.startWorker({ handlers: [probe(calls)], ackReplicas: acks });

  const delivery = await env.deliver({ id: 'fb_lost_later' });
  await env.completedRuns(1);
  // The marker is on the replica: the worker has let the success go from its memory.
  const marker = succeededMarkerKey(env.prefix, runSuccessKey('probe', delivery.key));
  const replica = redis.replica.client();
  cleanup.push(() => replica.disconnect());
  await vi.waitFor(async () => expect(await replica.exists(marker)).toBe(1), { timeout: 5_000 });

  await sendAgain(env, delivery);
  await env.completedRuns(2);
  await first.close(1_000);
  await env.startWorker({ handlers: [probe(calls)], ackReplicas: acks });
  await sendAgain(env, delivery);
  await env.completedRuns(3);

  expect(calls).toEqual([delivery.key]);
});

it('runs a delivery received again after DEDUPE_TTL_SECONDS, though the worker still holds the first one', async () => {
  const env = await createTestWorkerEnv({ dedupeTtlSeconds: 1 });
  cleanup.push(() => env.close());
  const calls: string[] = [];
  await env.startWorker({ handlers: [probe(calls)], ackReplicas: { replicas: 1, timeoutMs: 50 } });

  const delivery = await env.deliver({ id: 'fb_new_again' });
  await env.completedRuns(1);
  // The receiver forgets the key after its TTL: the same record sent again is a new delivery.
  await vi.waitFor(
    async () => expect(await env.producer.find(delivery.key), 'the key forgotten').toBeUndefined(),
    { timeout: 5_000 },
  );
  const again = { ...delivery, receivedAt: new Date().toISOString() };
  expect((await env.producer.enqueue(again)).status).toBe('queued');
  await env.completedRuns(2);

  expect(calls).toEqual([delivery.key, delivery.key]);
});
