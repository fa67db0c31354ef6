import { Redis } from 'ioredis';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { postSigned } from '../helpers/signed-request.js';
import { createTestReceiver, type TestReceiver } from '../helpers/test-receiver.js';

// The producer gives up within PRODUCER_COMMAND_TIMEOUT_MS (1.5 s). A client deadline above that
// turns a hang into a failure without timing the answer itself.
const CLIENT_DEADLINE_MS = 4_000;

let redis: RedisServer;
let receiver: TestReceiver;

beforeEach(async () => {
  redis = await startRedisServer();
  receiver = await createTestReceiver({ redisUrl: redis.url });
});

afterEach(async () => {
  await receiver.close();
  await redis.stop();
});

describe('while Redis is unavailable', () => {
  it('answers 503 with Retry-After when Redis is stopped, and stores nothing', async () => {
    await redis.stop();
    const response = await postSigned(receiver.app, { id: 'fb_down' }).timeout(CLIENT_DEADLINE_MS);
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.body).toMatchObject({ code: 'QUEUE_UNAVAILABLE' });
  });

  it('answers 503 when Redis accepts connections but does not answer', async () => {
    redis.pause();
    try {
      const response = await postSigned(receiver.app, { id: 'fb_paused' }).timeout(
        CLIENT_DEADLINE_MS,
      );
      expect(response.status).toBe(503);
    } finally {
      redis.resume();
    }
  });

  it('answers 503 with Retry-After when Redis refuses writes, and stores nothing', async () => {
    const admin = new Redis(redis.url);
    try {
      // No replica can acknowledge, so Redis refuses every write with NOREPLICAS.
      await admin.config('SET', 'min-replicas-to-write', '1');
      const response = await postSigned(receiver.app, { id: 'fb_refused' });
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('5');
      expect(response.body).toMatchObject({ code: 'QUEUE_UNAVAILABLE' });
      expect(receiver.logs).toContainEqual(
        expect.objectContaining({
          msg: 'delivery not acknowledged: redis unavailable (it may be stored all the same; the sender retries)',
        }),
      );
      await admin.config('SET', 'min-replicas-to-write', '0');
      expect(await receiver.deliveries.queue.count()).toBe(0);
    } finally {
      admin.disconnect();
    }
  });

  it('reports not ready while Redis is down, and ready again once it is back', async () => {
    await request(receiver.app).get('/readyz').expect(200);
    await redis.restart();
    await redis.stop();
    const down = await request(receiver.app).get('/readyz').timeout(CLIENT_DEADLINE_MS);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    await request(receiver.app).get('/healthz').expect(200);
  });

  it('recovers by itself when Redis comes back', async () => {
    const restarted = await startRedisServer();
    await receiver.close();
    receiver = await createTestReceiver({ redisUrl: restarted.url });
    try {
      await restarted.restart();
      // Posts until one is taken; the last answer is in the failure message.
      const response = await vi.waitFor(
        async () => {
          const attempt = await postSigned(receiver.app, { id: 'fb_back' });
          expect(attempt.status, 'a 202 after Redis restarted').toBe(202);
          return attempt;
        },
        { timeout: 10_000, interval: 100 },
      );
      expect(response.body.status).toBe('queued');
      await request(receiver.app).get('/readyz').expect(200);
    } finally {
      await receiver.close();
      await restarted.stop();
    }
  });
});
