/**
 * The console's `waiting` filter reads deliveries not routed yet from their queue: the newest
 * WAITING_SHOWN of them, however they are spread over the queue's states.
 */
import { afterEach, expect, it } from 'vitest';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createDeliveryLog, WAITING_SHOWN } from '../../src/runs/delivery-log.js';
import { createRunQueues } from '../../src/runs/run-queues.js';
import { createRunReader } from '../../src/runs/run-reader.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { createTestWorkerEnv } from '../helpers/test-worker.js';

const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

it('shows at most WAITING_SHOWN deliveries not routed yet, waiting and delayed together', async () => {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  const runQueues = createRunQueues(env.connection, env.prefix);
  cleanup.push(() => runQueues.close());
  // No worker runs: more than WAITING_SHOWN wait, and as many again are delayed (a routing
  // backing off), so each state alone holds more than a page of the filter.
  const each = WAITING_SHOWN + 20;
  for (let i = 0; i < each; i += 1) await env.deliver({ id: `fb_waiting_${i}` });
  for (let i = 0; i < each; i += 1) {
    const delivery: Delivery = {
      key: `feedback.created:fb_delayed_${i}`,
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { id: `fb_delayed_${i}` },
    };
    await env.deliveries.add(delivery.event, delivery, { delay: 60_000 });
  }
  expect(await env.deliveries.getJobCounts('waiting', 'delayed')).toEqual({
    waiting: each,
    delayed: each,
  });
  const history = createHistorySearch({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });
  const log = createDeliveryLog(
    env.deliveries,
    createRunReader(env.deliveries, runQueues),
    history,
    env.quarantine,
  );

  const page = await log.list({ state: 'waiting', offset: 0, limit: 3 * each });
  expect(page.total).toBe(WAITING_SHOWN);
  expect(page.deliveries).toHaveLength(WAITING_SHOWN);
  expect(
    new Set(page.deliveries.map((shown) => ('key' in shown ? shown.key : ''))).size,
    'each once',
  ).toBe(WAITING_SHOWN);
});
