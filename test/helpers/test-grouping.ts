/**
 * Grouping as a worker does it (similar-grouping.ts), for tests that group deliveries without a
 * worker: the default threshold, 100 000 kept per project, an hour's ttl, no windows, no logs,
 * unless the test says otherwise.
 */
import {
  createSimilarGrouping,
  type SimilarGrouping,
  type SimilarGroupingOptions,
} from '../../src/grouping/similar-grouping.js';
import { createLogger } from '../../src/logger.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';

export function testGrouping(
  options: Pick<SimilarGroupingOptions, 'connection' | 'prefix'> & Partial<SimilarGroupingOptions>,
): SimilarGrouping {
  return createSimilarGrouping({
    threshold: DEFAULT_SIMILAR_THRESHOLD,
    keep: 100_000,
    ttlSeconds: 3600,
    windows: [],
    logger: createLogger({ level: 'silent' }),
    ...options,
  });
}
