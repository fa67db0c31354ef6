/**
 * A run found completed before (its success marker in Redis when its job is taken: a delivery a
 * failover lost and its sender sent again, docs/runs.md) is not run again, and its delivery's
 * history says it completed: else the console's list and its API show it under way for as long as
 * the history keeps it. What the first completion recorded, when the history has it, stays.
 *
 * The marker is written as a worker whose run completed elsewhere writes it (the completion
 * ledger); with ACK_REPLICAS every run asks for it, a new-looking one too.
 */
import request from 'supertest';
import { afterEach, expect, it, vi } from 'vitest';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createLogger } from '../../src/logger.js';
import { runSuccessKey } from '../../src/runs/run-queues.js';
import { deduplicationIdFor } from '../../src/webhooks/delivery.js';
import { createCompletionLedger } from '../../src/worker/completion-ledger.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'completed-before-token-4b81';
const acks = { replicas: 1, timeoutMs: 50 };

let env: TestWorkerEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const NOT_RUN_AGAIN = 'handler run had completed before; not run again';

function probe(calls: string[]) {
  return defineHandler({
    name: 'probe',
    handle: ({ delivery }) => {
      calls.push(delivery.key);
      return { sent: delivery.key };
    },
  });
}

function historyOf(env: TestWorkerEnv) {
  return createHistorySearch({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });
}

it('records as completed a run whose success was marked before, the history not having it', async () => {
  env = await createTestWorkerEnv();
  const record = { id: 'fb_marked_before' };
  // The run completed on a worker whose history line was lost: only its marker is left.
  const ledger = createCompletionLedger({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
    logger: createLogger({ level: 'silent' }),
  });
  ledger.succeeded(
    runSuccessKey('probe', `feedback.created:${record.id}`),
    'elsewhere',
    Date.now(),
  );
  await ledger.close();

  const calls: string[] = [];
  const worker = await env.startWorker({ handlers: [probe(calls)], ackReplicas: acks });
  const delivery = await env.deliver(record);
  await env.completedRuns(1);
  expect(env.logs).toContainEqual(
    expect.objectContaining({ deliveryKey: delivery.key, handler: 'probe', msg: NOT_RUN_AGAIN }),
  );
  expect(calls, 'the handler was not run').toEqual([]);

  // No run under way in the history: its outcome is written.
  await env.historyHolds(1);
  const [entry] = (await historyOf(env).search({ offset: 0, limit: 1 })).entries;
  expect(entry?.outcomes.probe).toMatchObject({ state: 'completed' });
  const app = createTestAdminApp(env, worker.runQueues, TOKEN);
  const { body } = await request(app)
    .get(`/admin/api/deliveries?q=${record.id}`)
    .set('Authorization', `Bearer ${TOKEN}`)
    .expect(200);
  expect(body.deliveries).toEqual([
    expect.objectContaining({
      key: delivery.key,
      state: 'done',
      runs: [expect.objectContaining({ handler: 'probe', state: 'completed' })],
    }),
  ]);
});

it('keeps what the first completion recorded when the run is found completed again', async () => {
  env = await createTestWorkerEnv();
  const calls: string[] = [];
  const worker = await env.startWorker({ handlers: [probe(calls)], ackReplicas: acks });
  const delivery = await env.deliver({ id: 'fb_completed_first' });
  await env.completedRuns(1);
  await env.historyHolds(1);
  const history = historyOf(env);
  const first = (await history.search({ offset: 0, limit: 1 })).entries[0]?.outcomes.probe;
  expect(first).toMatchObject({ state: 'completed', result: { sent: delivery.key } });

  // A failover forgets the delivery; its sender sends it again, and it is queued anew.
  expect(await env.deliveries.removeDeduplicationKey(deduplicationIdFor(delivery.key))).toBe(1);
  expect((await env.producer.enqueue(delivery)).status, 'sent again').toBe('queued');
  await env.completedRuns(2);
  await vi.waitFor(() =>
    expect(env!.logs).toContainEqual(expect.objectContaining({ msg: NOT_RUN_AGAIN })),
  );
  // Its close writes what the history writer holds.
  await worker.close(1_000);

  expect(calls).toEqual([delivery.key]);
  const [entry] = (await history.search({ offset: 0, limit: 1 })).entries;
  expect(entry?.outcomes.probe, "the first completion's time and result").toEqual(first);
});
