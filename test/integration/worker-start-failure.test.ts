/**
 * A worker process whose runtime fails to start (here its first announcement: a key of the wrong
 * type where the running workers' roster belongs) leaves nothing behind for an embedder: its
 * probe server no longer holds METRICS_PORT, and its connection is closed.
 */
import { createServer } from 'node:net';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, expect, inject, it } from 'vitest';
import { loadWorkerConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { defineHandler } from '../../src/worker/handler.js';
import { startWorker } from '../../src/worker-process.js';
import { freePort } from '../helpers/free-port.js';

const redis = new Redis(inject('redisUrl'));
afterEach(() => redis.quit());

it('frees its probe port when its runtime fails to start', async () => {
  const port = await freePort();
  const config = loadWorkerConfig({
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `start-failure-${randomUUID()}`,
    METRICS_PORT: String(port),
  });
  await redis.set(`${config.queuePrefix}:handler-roster:workers`, 'not a hash');
  const handlers = [defineHandler({ name: 'early', handle: () => undefined })];
  await expect(
    startWorker(config, createLogger({ level: 'silent' }), { resolvedHandlers: handlers }),
  ).rejects.toThrow(/WRONGTYPE/);

  const server = createServer().listen(port, '0.0.0.0');
  await once(server, 'listening');
  server.close();
});
