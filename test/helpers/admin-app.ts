/** The admin router (console and dashboard) over a test worker's queues, as the receiver mounts it. */
import express, { type Express } from 'express';
import { createAdminRouter } from '../../src/http/admin-dashboard.js';
import { createBulkActions } from '../../src/runs/bulk-actions.js';
import { createDeadLetter } from '../../src/runs/dead-letter.js';
import { readRoster } from '../../src/runs/handler-roster.js';
import { readDeliveryStats } from '../../src/queue/delivery-stats.js';
import { handlerRunRetention, type RunQueues } from '../../src/runs/run-queues.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createDeliveryLog } from '../../src/runs/delivery-log.js';
import { createRunAgain } from '../../src/runs/restart.js';
import { createRunReader } from '../../src/runs/run-reader.js';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import type { TestWorkerEnv } from './test-worker.js';

/** COMPLETED_JOB_RETENTION_SECONDS of the console's app: other than the default day. */
export const RUN_RETENTION_SECONDS = 7_200;

export function createTestAdminApp(
  env: TestWorkerEnv,
  runQueues: RunQueues,
  token: string,
  /** Whether the console is given a reader of groups of similar feedback, as the receiver's always is. Default: not. */
  { similar = false }: { readonly similar?: boolean } = {},
): Express {
  const queues = async () => [env.deliveries, ...(await runQueues.all())];
  const runs = createRunReader(env.deliveries, runQueues);
  const history = createHistorySearch({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });
  const similarGroups = similar
    ? createSimilarGroups({
        connection: env.connection,
        prefix: env.prefix,
        ttlSeconds: env.dedupeTtlSeconds,
      })
    : undefined;
  return express().use(
    createAdminRouter({
      token,
      deliveries: env.deliveries,
      runQueues: runQueues.all,
      deliveryConsole: {
        deliveryLog: createDeliveryLog(env.deliveries, runs, history, env.quarantine),
        quarantine: env.quarantine,
        deliveries: env.producer,
        deadLetter: createDeadLetter({ runQueues, deliveries: env.deliveries }),
        runs,
        runAgain: createRunAgain(runs),
        bulk: createBulkActions({
          connection: env.connection,
          prefix: env.prefix,
          history,
          deliveries: env.deliveries,
          runQueues,
          dedupeTtlSeconds: env.dedupeTtlSeconds,
          retention: handlerRunRetention(RUN_RETENTION_SECONDS),
          similarFacts: similarGroups?.asRouted,
        }),
        handlerNames: async () =>
          (await readRoster(env.connection, env.prefix)).map((entry) => entry.name),
        queues,
        readStats: () => readDeliveryStats(env.connection, env.prefix),
        similarGroups,
      },
    }),
  );
}
