/**
 * Wires the console under /admin (its pages, its API, bull-board) to a Redis connection of its
 * own. Its reads can be big (a search reads many jobs); on the producer's connection they would
 * hold the senders' deliveries behind them. Only a quarantine replay writes through the
 * producer: it queues a delivery, which is the producer's job.
 */
import { Queue } from 'bullmq';
import type { ReceiverConfig } from './config.js';
import type { AdminDashboardOptions } from './http/admin-dashboard.js';
import type { Logger } from './logger.js';
import { DELIVERIES_QUEUE, type DeliveryQueueProducer } from './queue/deliveries-queue.js';
import { readDeliveryStats } from './queue/delivery-stats.js';
import { createHistorySearch } from './history/history-search.js';
import { createOutageReporter } from './queue/outage-reporter.js';
import { createQuarantine } from './queue/quarantine.js';
import { closeConnection, createConsoleConnection, type RedisConnection } from './queue/redis.js';
import { createBulkActions } from './runs/bulk-actions.js';
import { createDeadLetter } from './runs/dead-letter.js';
import { readRoster } from './runs/handler-roster.js';
import { createDeliveryLog } from './runs/delivery-log.js';
import { createSimilarGroups } from './grouping/similar-groups.js';
import { createRunQueues, handlerRunRetention, type RunQueues } from './runs/run-queues.js';
import { createRunAgain } from './runs/restart.js';
import { createRunReader } from './runs/run-reader.js';
import type { Delivery } from './webhooks/delivery.js';

export interface OpenedConsole {
  readonly admin: AdminDashboardOptions;
  /** The queues on the console's connection; the receiver's metrics read their depths here. */
  queues(): Promise<readonly Queue[]>;
  /** Closes its queues, then its connection. */
  close(): Promise<void>;
}

/** The queues on a console connection of their own, for reads that must not delay a delivery. */
export interface ConsoleQueues {
  readonly connection: RedisConnection;
  readonly deliveries: Queue<Delivery>;
  /** Each handler's runs queue, as workers announce their handlers. */
  readonly runQueues: RunQueues;
  /** The deliveries queue and every handler's runs queue. */
  queues(): Promise<readonly Queue[]>;
  /** Closes the queues, then the connection. */
  close(): Promise<void>;
}

/**
 * Opens the console's connection (`feedback-receiver:console`) and its queues. The receiver
 * opens these alone, without the console, to read queue depths for METRICS_PORT.
 */
export function openConsoleQueues(
  config: Pick<ReceiverConfig, 'redisUrl' | 'queuePrefix'>,
  logger: Logger,
): ConsoleQueues {
  const connection = createConsoleConnection(config.redisUrl, logger);
  const prefix = config.queuePrefix;
  const deliveries = new Queue<Delivery>(DELIVERIES_QUEUE, { connection, prefix });
  // The connection's state is logged once per outage already.
  const onError = (error: Error) => logger.debug({ error: error.message }, 'queue error');
  deliveries.on('error', onError);
  const runQueues = createRunQueues(connection, prefix, onError);
  return {
    connection,
    deliveries,
    runQueues,
    queues: async () => [deliveries, ...(await runQueues.all())],
    close: async () => {
      await Promise.all([deliveries.close(), runQueues.close()]);
      await closeConnection(connection);
    },
  };
}

export function openAdminConsole(
  config: Pick<
    ReceiverConfig,
    | 'redisUrl'
    | 'queuePrefix'
    | 'dedupeTtlSeconds'
    | 'traceUrlTemplate'
    | 'completedJobRetentionSeconds'
  >,
  token: string,
  intake: DeliveryQueueProducer,
  logger: Logger,
): OpenedConsole {
  const opened = openConsoleQueues(config, logger);
  const { connection, deliveries, runQueues, queues } = opened;
  const prefix = config.queuePrefix;
  const quarantine = createQuarantine({ connection, prefix });
  const runs = createRunReader(deliveries, runQueues);
  const history = createHistorySearch({ connection, prefix, ttlSeconds: config.dedupeTtlSeconds });
  // What Redis holds, whatever the receiver's SIMILAR: the workers group and keep the groups.
  const similarGroups = createSimilarGroups({
    connection,
    prefix,
    ttlSeconds: config.dedupeTtlSeconds,
    logger,
  });
  const bulk = createBulkActions({
    connection,
    prefix,
    history,
    deliveries,
    runQueues,
    dedupeTtlSeconds: config.dedupeTtlSeconds,
    retention: handlerRunRetention(config.completedJobRetentionSeconds),
    similarFacts: similarGroups.asRouted,
  });
  return {
    admin: {
      token,
      deliveries,
      runQueues: runQueues.all,
      outages: createOutageReporter(connection, logger, 'console'),
      deliveryConsole: {
        deliveryLog: createDeliveryLog(deliveries, runs, history, quarantine),
        quarantine,
        deliveries: intake,
        deadLetter: createDeadLetter({ runQueues, deliveries }),
        runs,
        runAgain: createRunAgain(runs),
        bulk,
        handlerNames: async () => (await readRoster(connection, prefix)).map((entry) => entry.name),
        queues,
        readStats: () => readDeliveryStats(connection, prefix),
        traceUrlTemplate: config.traceUrlTemplate,
        similarGroups,
      },
    },
    queues,
    close: async () => {
      await bulk.close();
      await opened.close();
    },
  };
}
