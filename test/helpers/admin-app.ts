/** The admin router (console and dashboard) over a test worker's queues, as the receiver mounts it. */
import type { Queue } from 'bullmq';
import express, { type Express } from 'express';
import { createAdminRouter } from '../../src/http/admin-dashboard.js';
import { createBulkActions } from '../../src/runs/bulk-actions.js';
import { createDeadLetter } from '../../src/runs/dead-letter.js';
import { readRoster } from '../../src/runs/handler-roster.js';
import { readDeliveryStats } from '../../src/queue/delivery-stats.js';
import type { HandlerRunData } from '../../src/runs/handler-runs-queue.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createDeliveryLog } from '../../src/runs/delivery-log.js';
import { createRunAgain } from '../../src/runs/restart.js';
import { createRunReader } from '../../src/runs/run-reader.js';
import type { TestWorkerEnv } from './test-worker.js';

export function createTestAdminApp(
  env: TestWorkerEnv,
  handlerRuns: Queue<HandlerRunData>,
  token: string,
): Express {
  const queues = [env.deliveries, handlerRuns];
  const runs = createRunReader(env.deliveries, handlerRuns);
  const markers = { connection: env.connection, prefix: env.prefix };
  const history = createHistorySearch({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });
  return express().use(
    createAdminRouter({
      token,
      deliveries: env.deliveries,
      runQueues: [handlerRuns],
      deliveryConsole: {
        deliveryLog: createDeliveryLog(env.deliveries, runs, history, env.quarantine),
        quarantine: env.quarantine,
        deliveries: env.producer,
        deadLetter: createDeadLetter({ handlerRuns, deliveries: env.deliveries, markers }),
        runs,
        runAgain: createRunAgain({ reader: runs, markers }),
        bulk: createBulkActions({
          connection: env.connection,
          prefix: env.prefix,
          history,
          deliveries: env.deliveries,
          handlerRuns,
          markers,
          dedupeTtlSeconds: env.dedupeTtlSeconds,
        }),
        handlerNames: async () =>
          (await readRoster(env.connection, env.prefix)).map((entry) => entry.name),
        queues,
        readStats: () => readDeliveryStats(env.connection, env.prefix),
      },
    }),
  );
}
