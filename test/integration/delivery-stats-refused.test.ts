/**
 * Delivery counts Redis refused are not sent again with those it applied: with the hour's key of
 * the wrong type, the minute's count is exactly what was counted after several writes, and the
 * refusal is warned about once; counts that never reached a Redis that was away are written once
 * it is back. A private redis-server, so its keys are only this test's.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createDeliveryStats } from '../../src/queue/delivery-stats.js';
import {
  closeConnection,
  createProducerConnection,
  waitForRedis,
  type RedisConnection,
} from '../../src/queue/redis.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

const PREFIX = 'stats-refused';
const HOUR = 3_600_000;
let redis: RedisServer;
let connection: RedisConnection;

beforeAll(async () => {
  redis = await startRedisServer();
  connection = createProducerConnection(redis.url, createLogger({ level: 'silent' }));
  await waitForRedis(connection, redis.url);
}, 30_000);

afterAll(async () => {
  await closeConnection(connection);
  await redis.stop();
});

/** The `queued` counts of every minute's (or hour's) key under `prefix`, added up. */
async function queuedIn(prefix: string, kind: 'minute' | 'hour'): Promise<number> {
  const keys = await connection.keys(`${prefix}:stats:${kind}:*`);
  const counts = await Promise.all(keys.map((key) => connection.hget(key, 'queued')));
  return counts.reduce((total, count) => total + Number(count), 0);
}

it('counts each answer once in its minute when Redis refuses its hour key', async () => {
  const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
  // The next hour's too, in case the counts below fall into it.
  for (const hour of [thisHour, thisHour + HOUR]) {
    await connection.set(`${PREFIX}:stats:hour:${hour}`, 'not a hash');
  }
  const warnings: string[] = [];
  const stats = createDeliveryStats({
    connection,
    prefix: PREFIX,
    logger: createLogger({
      level: 'warn',
      destination: { write: (line: string) => void warnings.push(line) },
    }),
  });
  stats.count('queued');
  stats.count('queued');
  await stats.close();
  stats.count('queued');
  // close() writes what is pending each time it is called: three more writes.
  for (let write = 0; write < 3; write += 1) await stats.close();

  expect(await queuedIn(PREFIX, 'minute')).toBe(3);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain('WRONGTYPE');
});

it('keeps the counts that never reached Redis for the write after it is back', async () => {
  const prefix = 'stats-away';
  const stats = createDeliveryStats({
    connection,
    prefix,
    logger: createLogger({ level: 'silent' }),
  });
  await redis.shutdown();
  // Counted once the connection knows Redis is away, so the write never reaches it.
  if (connection.status === 'ready') await once(connection, 'close');
  stats.count('queued');
  await stats.close();
  await redis.start();
  await waitForRedis(connection, redis.url);
  await stats.close();
  await stats.close();

  expect([await queuedIn(prefix, 'minute'), await queuedIn(prefix, 'hour')]).toEqual([1, 1]);
  for (const key of await connection.keys(`${prefix}:stats:*`)) {
    expect(await connection.ttl(key)).toBeGreaterThan(0);
  }
}, 30_000);
