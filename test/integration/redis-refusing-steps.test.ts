/**
 * A Redis that answers the executor's own steps with an error (out of memory under `noeviction`)
 * is not the handler's failure: the run gives its attempt back and runs again once Redis takes
 * writes, never the dead letter for it. A Redis of its own: `maxmemory` is the server's.
 */
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { ApiRateLimitedError } from '../../src/api/api-errors.js';
import { defineHandler } from '../../src/worker/handler.js';
import { countRuns } from '../helpers/completed-runs.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { startTestWorkerEnv } from '../helpers/test-worker.js';

let redis: RedisServer;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
});
// Memory back even after a test that failed with Redis out of it, for the next one.
afterEach(() => memoryBack());
afterAll(async () => {
  await admin.quit();
  await redis.stop();
});

/** A command answered before the caller goes on: for code that cannot wait (a `where()`). */
function redisCli(port: number, ...args: string[]): void {
  execFileSync('redis-cli', ['-p', String(port), ...args], { stdio: 'ignore' });
}

/** Every write that may grow memory is refused with OOM from now (no eviction: the default). */
const outOfMemory = () => admin.config('SET', 'maxmemory', '1');
const memoryBack = () => admin.config('SET', 'maxmemory', '0');

/** The lines that say runs give their attempts back while Redis refuses their steps. */
const givingBack = (logs: readonly Record<string, unknown>[]) =>
  logs.filter(({ msg }) => String(msg).startsWith('routing and handler runs: redis unavailable'));

it('gives the attempt back when Redis refuses the 429 wait (OOM), and runs again once it takes writes', async () => {
  const env = await startTestWorkerEnv({ redisUrl: redis.url });
  let calls = 0;
  const runtime = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'limited',
        attempts: 1, // an attempt spent on the refused wait would send the run to the dead letter
        handle: async () => {
          calls += 1;
          if (calls > 1) return 'done';
          // Redis runs out of memory while the API says to wait: the executor's `rateLimit`
          // (a write) is refused.
          await outOfMemory();
          throw new ApiRateLimitedError({
            method: 'PATCH',
            url: 'http://127.0.0.1/v1/feedback/1',
            status: 429,
            retryAfterMs: 1,
            source: 'service',
          });
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_oom_429' });
  // The first attempt has ended one way or another (BullMQ's moves survive OOM: their scripts'
  // first write frees memory).
  await vi.waitFor(
    async () => {
      expect(calls, 'handler calls').toBeGreaterThanOrEqual(1);
      expect(await countRuns(runtime.runQueues, 'active'), 'runs active').toBe(0);
    },
    { timeout: 10_000, interval: 20 },
  );
  expect(await countRuns(runtime.runQueues, 'failed'), 'runs in the dead letter').toBe(0);
  await memoryBack();
  await env.completedRuns(1);
  expect(calls, 'handler calls').toBe(2);
  expect(givingBack(env.logs), 'lines of the outage').toHaveLength(1);
});

it('gives the routing attempt back when Redis refuses to add the runs (OOM), and routes the delivery once it takes writes', async () => {
  const env = await startTestWorkerEnv({ redisUrl: redis.url });
  let handled = 0;
  let asked = 0;
  const runtime = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'routed',
        // Asked by the routing, after BullMQ made its job active, before it adds the run: Redis
        // runs out of memory then (at once: nothing is sent before the command has its answer).
        where: () => {
          asked += 1;
          if (asked === 1) redisCli(redis.port, 'CONFIG', 'SET', 'maxmemory', '1');
          return true;
        },
        handle: () => void (handled += 1),
      }),
    ],
  });
  await env.deliver({ id: 'fb_oom_routing' });
  // Its routing was refused and it waits to be routed again: a retry after a failed attempt
  // waits as delayed too, so the attempts made tell them apart.
  const routing = await vi.waitFor(
    async () => {
      const [job] = await env.deliveries.getJobs(['delayed']);
      expect(job, 'the delivery, delayed').toBeDefined();
      return job!;
    },
    { timeout: 10_000, interval: 20 },
  );
  expect(routing.attemptsMade, 'routing attempts spent').toBe(0);
  await memoryBack();
  await env.completedRuns(1);
  expect(handled, 'handler calls').toBe(1);
  expect(await countRuns(runtime.runQueues, 'failed'), 'runs in the dead letter').toBe(0);
  expect(givingBack(env.logs), 'lines of the outage').toHaveLength(1);
});
