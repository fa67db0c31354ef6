/**
 * A worker whose Redis goes away logs it once, and its return once: not a line per reconnect
 * attempt of each of its connections (BullMQ's workers emit every one of their errors).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isConnectionLost } from '../../src/queue/redis.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

/** Enough for each of the worker's connections to have been refused a few times. */
const RECONNECT_ATTEMPTS = 5;

let redis: RedisServer;
let env: TestWorkerEnv;

beforeEach(async () => {
  redis = await startRedisServer();
  env = await createTestWorkerEnv({ redisUrl: redis.url });
});

afterEach(async () => {
  await env.close();
  await redis.stop();
});

/** The worker's lines from `from` on (the test's producer has its own, tagged `producer`). */
const workerLines = (from: number) =>
  env.logs.slice(from).filter((line) => line.redis !== 'producer');
/** What an operator sees at the default level and above it: warnings and errors. */
const isWarning = (line: Record<string, unknown>) => Number(line.level) >= 40;
const BACK = 'redis connection ready again';

describe('a worker while its Redis is down', () => {
  it('logs the outage once, not at every reconnect attempt, and its end once', async () => {
    await env.startWorker({ handlers: [defineHandler({ name: 'noop', handle: async () => {} })] });
    const [connection] = env.workerConnections;
    let attempts = 0;
    connection!.on('reconnecting', () => attempts++);
    const from = env.logs.length;

    await redis.shutdown();
    await vi.waitFor(
      () => expect(attempts, 'reconnect attempts').toBeGreaterThanOrEqual(RECONNECT_ATTEMPTS),
      { timeout: 20_000, interval: 50 },
    );
    const lost = [
      expect.objectContaining({
        redis: 'worker',
        msg: expect.stringMatching(/^redis connection (closed|failed)$/),
      }),
    ];
    expect(workerLines(from).filter(isWarning)).toEqual(lost);

    await redis.start();
    await vi.waitFor(
      () => expect(workerLines(from).filter((line) => line.msg === BACK)).toHaveLength(1),
      { timeout: 20_000, interval: 50 },
    );
    // Every one of its connections is back too: the worker takes a delivery again.
    await env.deliver({ id: 'fb_after_outage' });
    await env.completedRuns(1, 20_000);
    expect(workerLines(from).filter((line) => line.msg === BACK)).toHaveLength(1);
    expect(workerLines(from).filter(isWarning)).toEqual(lost);
  });

  it('tells a lost connection from an error Redis answered with, which is still warned of', async () => {
    const answered = await env.connection.call('NO-SUCH-COMMAND').catch((error: unknown) => error);
    expect(answered).toBeInstanceOf(Error);
    expect(isConnectionLost(env.connection, answered)).toBe(false);
    // As a BullMQ worker passes on its blocking connection's refusal, after this one is back.
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
    });
    expect(isConnectionLost(env.connection, refused)).toBe(true);
  });
});
