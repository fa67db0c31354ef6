/**
 * What a producer side opens in Redis: one fail-fast connection, the deliveries queue on it, and
 * the handler-runs queue (for the dead letter, the dashboard and queue depths). Used by the
 * receiver and by the operator commands of the CLI.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { SharedConfig } from '../config.js';
import type { Logger } from '../logger.js';
import {
  createDeliveryQueue,
  DELIVERY_JOB_RETENTION,
  keepCompletedFor,
  type DeliveryQueueProducer,
} from './deliveries-queue.js';
import { createHandlerRunsQueue, type HandlerRunData } from './handler-runs-queue.js';
import { closeConnection, createProducerConnection } from './redis.js';

export interface ProducerQueues {
  readonly connection: Redis;
  readonly deliveries: DeliveryQueueProducer;
  readonly handlerRuns: Queue<HandlerRunData>;
  /** Closes both queues, then the connection. */
  close(): Promise<void>;
}

export function openProducerQueues(
  config: Pick<
    SharedConfig,
    'redisUrl' | 'queuePrefix' | 'dedupeTtlSeconds' | 'completedJobRetentionSeconds'
  >,
  logger: Logger,
): ProducerQueues {
  const connection = createProducerConnection(config.redisUrl, logger);
  const deliveries = createDeliveryQueue({
    connection,
    prefix: config.queuePrefix,
    dedupeTtlSeconds: config.dedupeTtlSeconds,
    retention: keepCompletedFor(DELIVERY_JOB_RETENTION, config.completedJobRetentionSeconds),
  });
  const handlerRuns = createHandlerRunsQueue(connection, config.queuePrefix);
  // The queues share the connection, whose state is already logged once per outage.
  for (const queue of [deliveries.queue, handlerRuns]) {
    queue.on('error', (error: Error) => logger.debug({ error: error.message }, 'queue error'));
  }
  return {
    connection,
    deliveries,
    handlerRuns,
    close: async () => {
      await handlerRuns.close();
      await deliveries.close();
      await closeConnection(connection);
    },
  };
}
