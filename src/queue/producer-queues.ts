/**
 * What a producer side opens in Redis: one fail-fast connection, the deliveries queue on it, and
 * the handlers' run queues (for the dead letter and queue depths). Used by the
 * receiver and by the operator commands of the CLI.
 */
import type { SharedConfig } from '../config.js';
import type { Logger } from '../logger.js';
import {
  createDeliveryQueue,
  deliveryRetention,
  type DeliveryQueueProducer,
} from './deliveries-queue.js';
import { createRunQueues, type RunQueues } from '../runs/run-queues.js';
import {
  closeConnection,
  createProducerConnection,
  PRODUCER_COMMAND_TIMEOUT_MS,
  type RedisConnection,
} from './redis.js';
import {
  createReplicatedWrites,
  type ReplicaAcks,
  type ReplicatedWrites,
} from './replicated-writes.js';

export interface ProducerQueues {
  readonly connection: RedisConnection;
  /** The writes a sender is answered for (deliveries, quarantine), confirmed as ACK_REPLICAS says. */
  readonly writes: ReplicatedWrites;
  readonly deliveries: DeliveryQueueProducer;
  readonly runQueues: RunQueues;
  /** Closes the queues, then the connection. */
  close(): Promise<void>;
}

export function openProducerQueues(
  config: Pick<
    SharedConfig,
    'redisUrl' | 'queuePrefix' | 'dedupeTtlSeconds' | 'completedJobRetentionSeconds'
  >,
  logger: Logger,
  acks?: ReplicaAcks,
): ProducerQueues {
  const connection = createProducerConnection(config.redisUrl, logger, {
    // A write may wait behind a WAIT, and a WAIT for its timeout: neither should time out first.
    commandTimeoutMs: PRODUCER_COMMAND_TIMEOUT_MS + (acks?.replicas ? acks.timeoutMs : 0),
  });
  const writes = createReplicatedWrites({
    connection,
    key: config.queuePrefix,
    ...(acks ? { acks } : {}),
  });
  const deliveries = createDeliveryQueue({
    connection,
    writes,
    prefix: config.queuePrefix,
    dedupeTtlSeconds: config.dedupeTtlSeconds,
    retention: deliveryRetention(config.completedJobRetentionSeconds),
  });
  // The queues share the connection, whose state is already logged once per outage.
  const onError = (error: Error) => logger.debug({ error: error.message }, 'queue error');
  deliveries.queue.on('error', onError);
  const runQueues = createRunQueues(connection, config.queuePrefix, onError);
  return {
    connection,
    writes,
    deliveries,
    runQueues,
    close: async () => {
      await runQueues.close();
      await deliveries.close();
      await closeConnection(connection);
    },
  };
}
