/**
 * The app's one error handler answers each error by its code and status: 413 and 415 keep their
 * codes on console routes, and a console page or API while Redis is down is 503
 * QUEUE_UNAVAILABLE with Retry-After, logged once per outage.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createReceiverDeps, type ReceiverDeps } from '../../src/receiver.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

const ADMIN_TOKEN = 'app-errors-admin-token-3d8e';
let redis: RedisServer;
let deps: ReceiverDeps;
let app: ReturnType<typeof createApp>;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  redis = await startRedisServer({ appendOnly: false });
  const logger = createLogger({
    level: 'info',
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  deps = createReceiverDeps(
    loadReceiverConfig({
      WEBHOOK_SECRET: 'app-errors-secret',
      REDIS_URL: redis.url,
      QUEUE_PREFIX: 'app-errors',
      ADMIN_TOKEN,
    }),
    logger,
  );
  app = createApp(deps);
  await waitUntilConsoleAnswers();
});
afterAll(async () => {
  await deps.close();
  await redis.stop();
});

const admin = (path: string) => request(app).get(path).auth(ADMIN_TOKEN, { type: 'bearer' });
const adminPost = (path: string) => request(app).post(path).auth(ADMIN_TOKEN, { type: 'bearer' });

async function waitUntilConsoleAnswers(): Promise<void> {
  await vi.waitFor(async () => expect((await admin('/admin/api/deliveries')).status).toBe(200), {
    timeout: 10_000,
  });
}

function expectProblem(response: request.Response, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(response.text)).toMatchObject({ status, code });
}

describe("the app's error handler", () => {
  it('answers an oversized JSON body to a console route 413 PAYLOAD_TOO_LARGE', async () => {
    const response = await adminPost('/admin/api/deliveries/bulk/plan')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ q: 'x'.repeat(64 * 1024) }));
    expectProblem(response, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers a console API body of another content type 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const response = await adminPost('/admin/api/deliveries/bulk/plan')
      .set('Content-Type', 'text/plain')
      .send('q=x');
    expectProblem(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers console pages and API 503 with Retry-After while Redis is down, logging once per outage', async () => {
    const before = lines.length;
    const outageLines = () =>
      lines
        .slice(before)
        .filter((line) => String(line.msg).startsWith('console: redis unavailable'));
    const errorLines = () => lines.slice(before).filter((line) => line.level === 50);
    await redis.shutdown();
    for (const path of ['/admin', '/admin/api/deliveries', '/admin/api/deliveries']) {
      const response = await admin(path);
      expectProblem(response, 503, 'QUEUE_UNAVAILABLE');
      expect(response.headers['retry-after']).toBe('5');
    }
    expect(outageLines()).toHaveLength(1);
    expect(errorLines()).toEqual([]);

    await redis.start();
    await waitUntilConsoleAnswers();
    await redis.shutdown();
    expectProblem(await admin('/admin/api/deliveries'), 503, 'QUEUE_UNAVAILABLE');
    expectProblem(await admin('/admin/api/deliveries'), 503, 'QUEUE_UNAVAILABLE');
    expect(outageLines()).toHaveLength(2);
    expect(errorLines()).toEqual([]);
    await redis.start();
  });
});

describe('the request log', () => {
  it('names a console request by its whole path, a probe-like one at info too', async () => {
    await waitUntilConsoleAnswers();
    const before = lines.length;
    expect((await admin('/admin/api/overview')).status).toBe(200);
    expect((await admin('/admin/api/metrics')).status).toBe(404);
    const requests = lines.slice(before).filter((line) => line.msg === 'request');
    expect(requests).toEqual([
      expect.objectContaining({ level: 30, method: 'GET', path: '/admin/api/overview' }),
      expect.objectContaining({ level: 30, path: '/admin/api/metrics', status: 404 }),
    ]);
  });
});
