/** `npm run demo` with REDIS_URL set: it uses that Redis, and leaves it as it found it. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(() => redis?.stop());

it('removes every key it wrote into the Redis at REDIS_URL, and only those', async () => {
  const connection = new Redis(redis.url);
  try {
    await connection.set('yours', 'kept');
    const demo = runCli(['demo'], { REDIS_URL: redis.url });
    expect(await demo.exited(), demo.output()).toBe(0);
    expect(demo.output()).toContain('Stopping everything … done');
    expect(await connection.keys('*')).toEqual(['yours']);
  } finally {
    connection.disconnect();
  }
}, 60_000);
