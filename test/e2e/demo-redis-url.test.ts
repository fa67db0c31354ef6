/** `npm run demo` with REDIS_URL set: it uses that Redis, and leaves it as it found it. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
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

it('removes its keys from the Redis at REDIS_URL when a Ctrl-C stops it while it starts', async () => {
  const connection = new Redis(redis.url);
  try {
    await connection.set('yours', 'kept');
    const demo = runCli(['demo'], { REDIS_URL: redis.url });
    // The worker has written to the Redis by then (its handlers, its queues).
    await vi.waitFor(
      () =>
        expect(demo.output()).toContain(
          'Starting a worker with examples/triage-rules.jsonc … done',
        ),
      { timeout: 30_000, interval: 20 },
    );
    demo.child.kill('SIGINT');
    expect(await demo.exited(), demo.output()).not.toBeNull();
    expect(demo.output()).toContain('Stopping everything … done');
    expect(await connection.keys('*')).toEqual(['yours']);
  } finally {
    connection.disconnect();
  }
}, 60_000);
