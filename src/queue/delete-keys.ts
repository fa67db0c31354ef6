import { Cluster } from 'ioredis';
import type { RedisConnection } from './redis.js';

/**
 * Deletes every key under `prefix:` and says how many there were: for the demo, which writes
 * under a prefix of its own into a Redis that may be someone's (REDIS_URL), and must leave it as
 * it found it. On a cluster-mode Redis every master is scanned.
 */
export async function deleteKeysUnder(
  connection: RedisConnection,
  prefix: string,
): Promise<number> {
  const nodes = connection instanceof Cluster ? connection.nodes('master') : [connection];
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`;
  let deleted = 0;
  for (const node of nodes) {
    for await (const keys of node.scanStream({ match, count: 500 }) as AsyncIterable<string[]>) {
      if (keys.length > 0) deleted += await node.unlink(...keys);
    }
  }
  return deleted;
}
