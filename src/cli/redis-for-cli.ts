/** Connections and queues for the operator commands (deliveries, quarantine). */
import { loadWorkerConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { createDeadLetter } from '../queue/dead-letter.js';
import { createDeliveryQueue } from '../queue/deliveries-queue.js';
import { createHandlerRunsQueue } from '../queue/handler-runs-queue.js';
import { createQuarantine } from '../queue/quarantine.js';
import { createProducerConnection } from '../queue/redis.js';

/** Runs `use` with the dead letter, the quarantine and the deliveries queue, then closes them. */
export async function withQueues<T>(
  use: (queues: {
    deadLetter: ReturnType<typeof createDeadLetter>;
    quarantine: ReturnType<typeof createQuarantine>;
    deliveries: ReturnType<typeof createDeliveryQueue>;
  }) => Promise<T>,
): Promise<T> {
  const config = loadWorkerConfig();
  const logger = createLogger({ level: 'silent' });
  const connection = createProducerConnection(config.redisUrl, logger);
  const deliveries = createDeliveryQueue({
    connection,
    prefix: config.queuePrefix,
    dedupeTtlSeconds: config.dedupeTtlSeconds,
  });
  const handlerRuns = createHandlerRunsQueue(connection, config.queuePrefix);
  try {
    await deliveries.queue.waitUntilReady().catch(() => {
      throw new Error(`cannot reach Redis at ${config.redisUrl}`);
    });
    return await use({
      deadLetter: createDeadLetter(handlerRuns),
      quarantine: createQuarantine({ connection, prefix: config.queuePrefix }),
      deliveries,
    });
  } finally {
    await handlerRuns.close();
    await deliveries.close();
    connection.disconnect();
  }
}
