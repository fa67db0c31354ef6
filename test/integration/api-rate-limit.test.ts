import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, inject } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createLogger } from '../../src/logger.js';
import { createRedisRateLimiter } from '../../src/queue/api-rate-limiter.js';
import { createWorkerConnection } from '../../src/queue/redis.js';
import { defineHandler } from '../../src/worker/handler.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const LIMIT = 3;
const WINDOW_MS = 1_000;

let api: FakeFeedbackApi;
let env: TestWorkerEnv;
const connections: ReturnType<typeof createWorkerConnection>[] = [];

beforeAll(async () => {
  api = await startFakeFeedbackApi();
});
afterAll(async () => {
  await api.close();
});
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(async () => {
  await env.close();
  for (const connection of connections.splice(0)) connection.disconnect();
});

/** A client whose limiter is shared through Redis, as each worker process builds its own. */
function limitedClient() {
  const connection = createWorkerConnection(inject('redisUrl'), createLogger({ level: 'silent' }));
  connections.push(connection);
  return createApiClient({
    baseUrl: api.url,
    token: API_TOKEN,
    rateLimiter: createRedisRateLimiter({
      connection,
      prefix: env.prefix,
      limit: LIMIT,
      windowMs: WINDOW_MS,
    }),
  });
}

describe('the shared API rate limit', () => {
  it('holds for two workers together, and every call still goes out', async () => {
    const patch = defineHandler({
      name: 'patch',
      handle: ({ record, api: client }) => client.updateFeedback(record.id, { priority_id: 2 }),
    });
    await env.startWorker({ handlers: [patch], api: limitedClient(), concurrency: 5 });
    await env.startWorker({ handlers: [patch], api: limitedClient(), concurrency: 5 });
    const count = 10;
    for (let i = 0; i < count; i += 1) await env.deliver({ id: `fb_${i}` });
    await env.completedRuns(count, 20_000);

    const times = api.requests.map((request) => request.at).sort((a, b) => a - b);
    expect(times).toHaveLength(count);
    // Requests were held back: unlimited, all ten arrive within a few milliseconds. (The exact
    // limit is checked on the limiter itself below; arrival times here jitter with the load.)
    for (let i = 0; i + LIMIT < times.length; i += 1) {
      expect(times[i + LIMIT]! - times[i]!).toBeGreaterThan(WINDOW_MS / 2);
    }
  });

  it('grants exactly the limit to limiters in separate processes asking at once', async () => {
    const limiters = [0, 1].map(() => {
      const connection = createWorkerConnection(
        inject('redisUrl'),
        createLogger({ level: 'silent' }),
      );
      connections.push(connection);
      // A long window, so that no slot frees up while the test runs.
      return createRedisRateLimiter({
        connection,
        prefix: env.prefix,
        limit: LIMIT,
        windowMs: 60_000,
      });
    });
    const waits = await Promise.all(
      Array.from({ length: 10 }, (_, i) => limiters[i % 2]!.acquire()),
    );
    const granted = waits.filter((wait) => wait === 0);
    const held = waits.filter((wait) => wait !== 0);
    expect(granted).toHaveLength(LIMIT);
    expect(held).toHaveLength(waits.length - LIMIT);
    // Each one held back is told to wait until a slot frees: within the window and its margin.
    for (const wait of held) {
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(61_000);
    }
  });

  it('holds a slot a margin past the window, for the time a request takes to arrive', async () => {
    const connection = createWorkerConnection(
      inject('redisUrl'),
      createLogger({ level: 'silent' }),
    );
    connections.push(connection);
    const limiter = createRedisRateLimiter({
      connection,
      prefix: env.prefix,
      limit: 1,
      windowMs: 60_000,
      marginMs: 1_000,
    });
    expect(await limiter.acquire()).toBe(0);
    // The next slot frees a whole window and the margin after the first was taken.
    expect(await limiter.acquire()).toBeGreaterThan(60_000);
  });
});
