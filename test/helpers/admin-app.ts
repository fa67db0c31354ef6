/** The admin router (console and dashboard) over a test worker's queues, as the receiver mounts it. */
import type { Queue } from 'bullmq';
import express, { type Express } from 'express';
import { createAdminRouter } from '../../src/http/admin-dashboard.js';
import { createDeadLetter } from '../../src/queue/dead-letter.js';
import { readDeliveryStats } from '../../src/queue/delivery-stats.js';
import type { HandlerRunData } from '../../src/queue/handler-runs-queue.js';
import { createDeliveryLog } from '../../src/worker/delivery-log.js';
import { createRunAgain } from '../../src/worker/run-again.js';
import type { TestWorkerEnv } from './test-worker.js';

export function createTestAdminApp(
  env: TestWorkerEnv,
  handlerRuns: Queue<HandlerRunData>,
  token: string,
): Express {
  const queues = [env.deliveries, handlerRuns];
  return express().use(
    createAdminRouter({
      token,
      queues,
      deliveryConsole: {
        deliveryLog: createDeliveryLog(env.deliveries, handlerRuns, env.quarantine),
        quarantine: env.quarantine,
        deliveries: env.producer,
        deadLetter: createDeadLetter(handlerRuns, env.deliveries),
        runAgain: createRunAgain({
          deliveries: env.deliveries,
          handlerRuns,
          connection: env.connection,
          prefix: env.prefix,
          dedupeTtlSeconds: 3600,
        }),
        queues,
        readStats: () => readDeliveryStats(env.connection, env.prefix),
      },
    }),
  );
}
