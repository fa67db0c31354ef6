/** Connections and queues for the operator commands (deliveries, quarantine, groups). */
import { loadWorkerConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { createSimilarGroups, type SimilarGroups } from '../grouping/similar-groups.js';
import { createHistorySearch } from '../history/history-search.js';
import { createBulkActions, type BulkActions } from '../runs/bulk-actions.js';
import { createDeadLetter } from '../runs/dead-letter.js';
import {
  moveLegacyRuns,
  type LegacyRunsMove,
  type MoveLegacyRunsOptions,
} from '../runs/legacy-runs.js';
import { handlerRunRetention } from '../runs/run-queues.js';
import type { DeliveryQueueProducer } from '../queue/deliveries-queue.js';
import { openProducerQueues } from '../queue/producer-queues.js';
import { createQuarantine } from '../queue/quarantine.js';
import { REFUSED_FOR_MS, waitForRedis } from '../queue/redis.js';

/**
 * Runs `use` with the dead letter, the quarantine, the deliveries queue, the bulk actions and the
 * groups of similar feedback, then closes them.
 */
export async function withQueues<T>(
  use: (queues: {
    deadLetter: ReturnType<typeof createDeadLetter>;
    quarantine: ReturnType<typeof createQuarantine>;
    deliveries: DeliveryQueueProducer;
    bulk: BulkActions;
    /** What Redis holds of grouping, whatever this process's SIMILAR: workers keep the groups. */
    similarGroups: SimilarGroups;
    /** Moves the runs an earlier version left in its one queue (legacy-runs.ts). */
    moveLegacyRuns: (
      options: Pick<MoveLegacyRunsOptions, 'includeFailed'>,
    ) => Promise<LegacyRunsMove>;
  }) => Promise<T>,
): Promise<T> {
  const config = loadWorkerConfig();
  const { connection, deliveries, runQueues, close } = openProducerQueues(
    config,
    createLogger({ level: 'silent' }),
  );
  try {
    await waitForRedis(connection, config.redisUrl, { refusedForMs: REFUSED_FOR_MS });
    const prefix = config.queuePrefix;
    const similarGroups = createSimilarGroups({
      connection,
      prefix,
      ttlSeconds: config.dedupeTtlSeconds,
    });
    return await use({
      deadLetter: createDeadLetter({ runQueues, deliveries: deliveries.queue }),
      bulk: createBulkActions({
        connection,
        prefix,
        history: createHistorySearch({ connection, prefix, ttlSeconds: config.dedupeTtlSeconds }),
        deliveries: deliveries.queue,
        runQueues,
        dedupeTtlSeconds: config.dedupeTtlSeconds,
        retention: handlerRunRetention(config.completedJobRetentionSeconds),
        similarFacts: similarGroups.asRouted,
      }),
      quarantine: createQuarantine({ connection, prefix: config.queuePrefix }),
      similarGroups,
      moveLegacyRuns: (options) =>
        moveLegacyRuns({
          ...options,
          connection,
          prefix,
          runQueues,
          dedupeTtlSeconds: config.dedupeTtlSeconds,
          retention: handlerRunRetention(config.completedJobRetentionSeconds),
        }),
      deliveries,
    });
  } finally {
    await close();
  }
}
