/**
 * A shutdown that has aborted its running handlers also stops the attempts that start after it:
 * BullMQ may have handed a worker a job just before the worker stopped taking them.
 */
import { randomUUID } from 'node:crypto';
import { WaitingError, Worker } from 'bullmq';
import { expect, inject, it, onTestFinished } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createHistoryWriter } from '../../src/history/history-writer.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection } from '../../src/queue/redis.js';
import { addRuns, createRunQueues, runQueueName } from '../../src/runs/run-queues.js';
import { createCompletionLedger } from '../../src/worker/completion-ledger.js';
import { defineHandler } from '../../src/worker/handler.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { createRuns } from '../../src/worker/runs.js';

it('puts back a run whose attempt starts after the shutdown aborted, without running its handler or recording an attempt', async () => {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const logger = createLogger({ level: 'info', destination: { write: () => undefined } });
  const connection = createWorkerConnection(inject('redisUrl'), logger);
  const runQueues = createRunQueues(connection, prefix);
  const completions = createCompletionLedger({ connection, prefix, ttlSeconds: 60, logger });
  const history = createHistoryWriter({ connection, prefix, ttlSeconds: 60, logger });
  // The worker only hands out the job, as BullMQ's worker does before calling its processor.
  const worker = new Worker(runQueueName('late'), null, { connection, prefix, autorun: false });
  onTestFinished(async () => {
    await worker.close();
    await history.close();
    await completions.close();
    await runQueues.close();
    connection.disconnect();
  });
  let handled = 0;
  const runs = createRuns({
    connection,
    handlers: [defineHandler({ name: 'late', handle: () => void (handled += 1) })],
    api: createApiClient({ baseUrl: undefined, token: undefined }),
    logger,
    dedupeTtlSeconds: 60,
    runQueues,
    completions,
    history,
    similar: undefined,
    roster: { running: () => [], read: async () => [], everyMs: 5_000 },
    similarWhenRunning: undefined,
  });
  const delivery: Delivery = {
    key: 'feedback.created:fb_late',
    event: 'feedback.created',
    receivedAt: new Date().toISOString(),
    record: { id: 'fb_late' },
  };
  await addRuns(
    runQueues,
    { deliveryJobId: randomUUID(), delivery },
    [{ handler: 'late', attempts: 3 }],
    { dedupeTtlSeconds: 60 },
  );
  const token = randomUUID();
  const job = await worker.getNextJob(token);

  expect(runs.abortAll(new Error('worker shutting down')), 'attempts running').toBe(0);
  await expect(runs.run(job!, token)).rejects.toBeInstanceOf(WaitingError);

  expect(handled, 'handler calls').toBe(0);
  const after = await runQueues.of('late').getJob(job!.id!);
  expect(await after!.getState()).toBe('waiting');
  expect(after!.attemptsMade, 'attempts spent').toBe(0);
  // Not an attempt: the console lists none for it.
  const { logs } = await runQueues.of('late').getJobLogs(job!.id!);
  expect(logs, 'attempt records').toEqual([]);
});
