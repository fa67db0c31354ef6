/**
 * The console's budget, over real HTTP: a bounded number of its requests served at once, a
 * bounded queue behind them, 503 CONSOLE_BUSY beyond; and its reads on a Redis connection of its
 * own, never the one that stores deliveries.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createRequestGate } from '../../src/http/console/request-gate.js';
import { createLogger } from '../../src/logger.js';
import { createReceiverDeps } from '../../src/receiver.js';

describe('the request gate', () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  /** A server whose requests each wait until the test lets them finish, in order of arrival. */
  async function gatedServer() {
    const waiting: (() => void)[] = [];
    const started: string[] = [];
    const arrived: string[] = [];
    const closed: string[] = [];
    const recordClose: express.RequestHandler = (req, res, next) => {
      arrived.push(req.path);
      res.once('close', () => closed.push(req.path));
      next();
    };
    const app = express().use(
      recordClose,
      createRequestGate({ running: 1, waiting: 1 }),
      (req, res) => {
        started.push(req.path);
        waiting.push(() => res.send(req.path));
      },
    );
    server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server!.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const finishNext = async () => {
      await vi.waitFor(() => expect(waiting.length).toBeGreaterThan(0));
      waiting.shift()!();
    };
    return { base, started, arrived, closed, finishNext };
  }

  it('serves one at a time, queues one, and refuses the next with 503 CONSOLE_BUSY', async () => {
    const { base, started, finishNext } = await gatedServer();
    const first = fetch(`${base}/first`);
    await vi.waitFor(() => expect(started).toEqual(['/first']));
    const second = fetch(`${base}/second`);
    // The third is answered at once, while the first is still being served.
    const third = await fetch(`${base}/third`);
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(await third.json()).toMatchObject({ code: 'CONSOLE_BUSY' });
    expect(started).toEqual(['/first']);

    await finishNext();
    expect(await (await first).text()).toBe('/first');
    await vi.waitFor(() => expect(started).toEqual(['/first', '/second']));
    await finishNext();
    expect(await (await second).text()).toBe('/second');
  });

  it('drops a waiting request whose client went away, and frees its place', async () => {
    const { base, started, arrived, closed, finishNext } = await gatedServer();
    const first = fetch(`${base}/first`);
    await vi.waitFor(() => expect(started).toEqual(['/first']));
    const leaving = new AbortController();
    const gone = fetch(`${base}/gone`, { signal: leaving.signal }).catch(() => 'aborted');
    // Queued: the queue (of one) is full now.
    await vi.waitFor(async () => expect((await fetch(`${base}/probe`)).status).toBe(503));
    leaving.abort();
    expect(await gone).toBe('aborted');
    await vi.waitFor(() => expect(closed).toContain('/gone'));
    // Its place is free again: the next one waits, and takes the place.
    const next = fetch(`${base}/next`);
    await vi.waitFor(() => expect(arrived).toContain('/next'));
    await vi.waitFor(async () => expect((await fetch(`${base}/extra`)).status).toBe(503));
    await finishNext();
    expect(await (await first).text()).toBe('/first');
    await finishNext();
    expect(await (await next).text()).toBe('/next');
    expect(started).toEqual(['/first', '/next']);
  });
});

describe('the console on a receiver', () => {
  const redis = new Redis(inject('redisUrl'));
  const deps = createReceiverDeps(
    loadReceiverConfig({
      WEBHOOK_SECRET: 'budget-secret',
      ADMIN_TOKEN: 'budget-token-71c2',
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: `test-budget-${randomUUID().slice(0, 8)}`,
    }),
    createLogger({ level: 'silent' }),
  );
  afterAll(async () => {
    await deps.close();
    redis.disconnect();
  });

  it('reads on a connection of its own, not the producer’s', async () => {
    const clients = async () =>
      String(await redis.call('CLIENT', 'LIST'))
        .split('\n')
        .filter((line: string) => line.includes(`name=feedback-receiver:`));
    await request(createApp(deps))
      .get('/admin/api/deliveries?q=anything')
      .set('Authorization', 'Bearer budget-token-71c2')
      .expect(200);
    const consoleClients = (await clients()).filter((line: string) =>
      line.includes('name=feedback-receiver:console'),
    );
    expect(consoleClients.length).toBeGreaterThan(0);
    // Its last command was one of the search's reads, not the connection's setup.
    expect(
      consoleClients.some((line: string) => !/ cmd=(client|info|select|NULL)/.test(line)),
    ).toBe(true);
  });
});
