/**
 * The dashboard's defences, over real HTTP against a real Redis: no state change from another
 * site whatever credentials it carries, and no job added or edited by hand.
 */
import { randomUUID } from 'node:crypto';
import { Worker, type Queue } from 'bullmq';
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createReceiverDeps, type ReceiverDeps } from '../../src/receiver.js';
import { Redis } from 'ioredis';
import { announceHandlers } from '../../src/runs/handler-roster.js';
import { createRunQueue, runQueueName, type HandlerRunData } from '../../src/runs/run-queues.js';
import { postSigned } from '../helpers/signed-request.js';

const ADMIN_TOKEN = 'admin-token-3e8a41';
const basic = `Basic ${Buffer.from(`operator:${ADMIN_TOKEN}`).toString('base64')}`;
const api = '/admin/queues/api/queues';

const prefix = `test-admin-${randomUUID().slice(0, 8)}`;
let deps: ReceiverDeps;
let app: Express;
let runs: Queue<HandlerRunData>;

/** The runs queue of a handler a worker has announced, as the dashboard lists them. */
const HANDLER_RUNS_QUEUE = runQueueName('notify');

beforeAll(async () => {
  const roster = new Redis(inject('redisUrl'));
  await announceHandlers(roster, prefix, [{ name: 'notify', attempts: 1 }], {
    id: 'a-worker',
    runningForMs: 60_000,
  });
  roster.disconnect();
  deps = createReceiverDeps(
    loadReceiverConfig({
      WEBHOOK_SECRET: 'admin-secret',
      ADMIN_TOKEN,
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: prefix,
    }),
    createLogger({ level: 'silent' }),
  );
  app = createApp(deps);
  runs = createRunQueue({ url: inject('redisUrl') }, prefix, 'notify');
});
afterAll(async () => {
  await runs.close();
  await deps.close();
});

describe('the dashboard under /admin', () => {
  it.each([
    ['POST', `${api}/deliveries/add`, 'text/plain'],
    ['POST', `${api}/deliveries/add`, 'application/x-www-form-urlencoded'],
    ['PUT', `${api}/${HANDLER_RUNS_QUEUE}/retry/failed`, 'text/plain'],
    ['PUT', `${api}/pause`, 'text/plain'],
    ['PATCH', `${api}/deliveries/some-job/update-data`, 'text/plain'],
    ['DELETE', `${api}/deliveries/empty`, 'text/plain'],
  ])(
    'refuses a cross-site %s to %s (%s) that carries valid credentials',
    async (method, path, type) => {
      const agent = request(app);
      const response = await agent[method.toLowerCase() as 'post'](path)
        .set('Authorization', basic)
        .set('Sec-Fetch-Site', 'cross-site')
        .set('Origin', 'https://evil.example')
        .set('Content-Type', type)
        .send('{"name":"feedback.created","data":{}}')
        .expect(403);
      expect(response.body).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    },
  );

  it('refuses a POST from a same-site subdomain and one whose Origin is another host', async () => {
    await request(app)
      .put(`${api}/pause`)
      .set('Authorization', basic)
      .set('Sec-Fetch-Site', 'same-site')
      .expect(403);
    await request(app)
      .put(`${api}/pause`)
      .set('Authorization', basic)
      .set('Origin', 'http://attacker.localhost:1234')
      .expect(403);
    expect(await deps.deliveries.queue.isPaused()).toBe(false);
  });

  it('refuses to add a job or replace its data, even from its own pages', async () => {
    for (const queue of ['deliveries', HANDLER_RUNS_QUEUE]) {
      const response = await request(app)
        .post(`${api}/${queue}/add`)
        .set('Authorization', basic)
        .set('Sec-Fetch-Site', 'same-origin')
        .send({ name: 'feedback.created', data: { key: 'forged' } })
        .expect(403);
      expect(response.body).toMatchObject({ code: 'JOB_CHANGE_REFUSED' });
    }
    await request(app)
      .patch(`${api}/deliveries/any-job/update-data`)
      .set('Authorization', basic)
      .set('Sec-Fetch-Site', 'same-origin')
      .send({ data: { key: 'forged' } })
      .expect(403);
    expect(await deps.deliveries.queue.count()).toBe(0);
  });

  it('takes a state change from its own pages, and from a client that is no browser', async () => {
    await request(app)
      .put(`${api}/pause`)
      .set('Authorization', basic)
      .set('Sec-Fetch-Site', 'same-origin')
      .expect(200);
    expect(await runs.isPaused()).toBe(true);
    // Read-only: pausing all leaves the deliveries queue as it is.
    expect(await deps.deliveries.queue.isPaused()).toBe(false);
    await request(app)
      .put(`${api}/resume`)
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .expect(200);
    expect(await runs.isPaused()).toBe(false);
  });

  it('takes the token after more than one space, and Bearer in any case', async () => {
    await request(app)
      .get('/admin/queues')
      .set('Authorization', `Bearer  ${ADMIN_TOKEN}`)
      .expect(200);
    await request(app)
      .get('/admin/queues')
      .set('Authorization', `bearer ${ADMIN_TOKEN}`)
      .expect(200);
    await request(app).get('/admin/queues').set('Authorization', `Bearer  wrong`).expect(401);
  });

  it('answers 401 without the token, before anything else', async () => {
    await request(app).get('/admin/queues').expect(401);
    await request(app).put(`${api}/pause`).set('Sec-Fetch-Site', 'same-origin').expect(401);
  });
});

describe("the console's overview, fed by the receiver's own route", () => {
  it('counts what the route answered, shared through Redis', async () => {
    const body = JSON.stringify({ id: 'fb_overview', title: 'Counted' });
    await postSigned(app, body, { secret: 'admin-secret' }).expect(202);
    await postSigned(app, body, { secret: 'admin-secret' }).expect(200);
    await postSigned(app, body, { secret: 'not-the-secret' }).expect(401);
    await vi.waitFor(
      async () => {
        const { body: overview } = await request(app)
          .get('/admin/api/overview')
          .set('Authorization', basic)
          .expect(200);
        expect(overview.stats.lastHour, 'the counts, once written').toEqual({
          queued: 1,
          duplicate: 1,
          'rejected:signature_mismatch': 1,
          'secret:0': 2,
        });
      },
      { timeout: 5_000 },
    );
    // The delivery keeps how it was accepted, and its page says so in its timeline.
    const key = encodeURIComponent('feedback.created:fb_overview');
    const { body: delivery } = await request(app)
      .get(`/admin/api/deliveries/${key}`)
      .set('Authorization', basic)
      .expect(200);
    expect(delivery).toMatchObject({
      receipt: { scheme: 'hmac-sha256', secretIndex: 0 },
      queuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const page = await request(app).get(`/admin/deliveries/${key}`).set('Authorization', basic);
    expect(page.text).toContain('received, signed (hmac-sha256) with secret #1');
  });
});

describe('the dashboard cannot break a promise', () => {
  const own = (method: 'put' | 'patch', path: string) =>
    request(app)[method](path).set('Authorization', basic).set('Sec-Fetch-Site', 'same-origin');

  /** A run of each end state in the runs queue, made by a BullMQ worker of the test's own. */
  async function finishedRuns(): Promise<{ completed: string; failed: string }> {
    const worker = new Worker(
      HANDLER_RUNS_QUEUE,
      async (job) => {
        if (job.name === 'fails') throw new Error('failed on purpose');
      },
      { connection: { url: inject('redisUrl') }, prefix },
    );
    try {
      const completed = await runs.add('completes', {} as HandlerRunData);
      const failed = await runs.add('fails', {} as HandlerRunData);
      await vi.waitFor(
        async () => {
          expect(await completed.getState()).toBe('completed');
          expect(await failed.getState()).toBe('failed');
        },
        { timeout: 10_000 },
      );
      return { completed: String(completed.id), failed: String(failed.id) };
    } finally {
      await worker.close();
    }
  }

  it('refuses Empty, Clean, Obliterate, Promote, Remove, setting and releasing a rate limit on runs', async () => {
    const { completed, failed } = await finishedRuns();
    const waiting = await runs.add('waits', {} as HandlerRunData, { delay: 60_000 });
    const queue = `${api}/${HANDLER_RUNS_QUEUE}`;
    for (const path of [
      `${queue}/empty`,
      `${queue}/clean/completed`,
      `${queue}/clean/failed`,
      `${queue}/obliterate`,
      `${queue}/promote`,
      `${queue}/rate-limit/release`,
      // BullMQ would count it over the workers' limiter's second, not over its own duration.
      `${queue}/rate-limit`,
      `${queue}/${String(waiting.id)}/promote`,
      `${queue}/${failed}/clean`,
      `${queue}/${completed}/retry`,
    ]) {
      const response = await own('put', path).expect(403);
      expect(response.body, path).toMatchObject({ code: 'DASHBOARD_ACTION_REFUSED' });
    }
    for (const path of [`${queue}/${String(waiting.id)}/delay`, `${queue}/${failed}/priority`]) {
      await own('patch', path).send({ delay: 0, priority: 1 }).expect(403);
    }
    expect(await runs.getJobState(completed)).toBe('completed');
    expect(await runs.getJobState(failed)).toBe('failed');
    expect(await waiting.getState()).toBe('delayed');
    await waiting.remove();
  });

  it('retries a failed run', async () => {
    const { failed } = await finishedRuns();
    await own('put', `${api}/${HANDLER_RUNS_QUEUE}/${failed}/retry`).expect(204);
    expect(await runs.getJobState(failed)).toBe('waiting');
    await runs.remove(failed);
  });

  // After the overview's test: this delivery would be in its counts.
  it('changes nothing on the deliveries queue', async () => {
    const body = JSON.stringify({ id: 'fb_read_only', title: 'Kept' });
    const before = await deps.deliveries.queue.count();
    await postSigned(app, body, { secret: 'admin-secret' }).expect(202);
    for (const path of ['empty', 'clean/completed', 'obliterate', 'promote', 'pause']) {
      const { status } = await own('put', `${api}/deliveries/${path}`);
      expect([403, 405], path).toContain(status);
    }
    expect(await deps.deliveries.queue.count()).toBe(before + 1);
    expect(await deps.deliveries.queue.isPaused()).toBe(false);
  });
});
