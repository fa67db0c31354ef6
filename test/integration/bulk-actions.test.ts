/**
 * Acting on a search result, over the console's JSON API against a real worker: retry every run
 * the search finds failed, and run a handler added later over deliveries it never saw (a
 * backfill), with the count stated first and the progress followed; and the refusals.
 */
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHistorySearch } from '../../src/history/history-search.js';
import { BulkBusyError, createBulkActions } from '../../src/runs/bulk-actions.js';
import { handlerRunRetention } from '../../src/runs/run-queues.js';
import { defineHandler } from '../../src/worker/handler.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'bulk-token-4d1f0a';
const bearer = `Bearer ${TOKEN}`;

let env: TestWorkerEnv;
let app: Express;
let worker: WorkerRuntime;
let laterWorker: WorkerRuntime;
let picky = true;
const pickyRan: string[] = [];
const late: string[] = [];

const handlers = [
  defineHandler({
    name: 'picky',
    attempts: 1,
    handle: ({ record }) => {
      if (picky && record.title?.toLowerCase().includes('refund')) throw new Error('picky said no');
      pickyRan.push(record.id);
    },
  }),
];
const lateHandler = defineHandler({
  name: 'late',
  handle: ({ record }) => void late.push(record.id),
});

/** Until it holds: worker round trips on a busy machine take their time. */
const eventually = <T>(check: () => T | Promise<T>) =>
  vi.waitFor(check, { timeout: 10_000, interval: 50 });

beforeAll(async () => {
  env = await createTestWorkerEnv();
  worker = await env.startWorker({ handlers });
  for (const [id, title] of [
    ['fb_b1', 'Refund never came'],
    ['fb_b2', 'Love it'],
    ['fb_b3', 'Second refund request'],
    ['fb_b4', 'Slow page'],
  ]) {
    await env.deliver({ id: id!, title: title! });
  }
  await env.completedRuns(2);
  await env.failedRuns(2);
  await env.historyHolds(4);
  app = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(() => env?.close());

const post = (path: string, body: object) =>
  request(app).post(path).set('Authorization', bearer).send(body);
const progressOf = async (id: string) =>
  (
    await request(app)
      .get(`/admin/api/deliveries/bulk/${id}`)
      .set('Authorization', bearer)
      .expect(200)
  ).body;

describe('POST /admin/api/deliveries/bulk', () => {
  it('retries every failed run a search finds, after saying how many', async () => {
    const plan = await post('/admin/api/deliveries/bulk/plan', {
      action: 'retry',
      q: 'refund',
    }).expect(200);
    expect(plan.body).toMatchObject({ deliveries: 2, runs: 2 });

    picky = false;
    const started = await post('/admin/api/deliveries/bulk', {
      action: 'retry',
      q: 'refund',
    }).expect(202);
    expect(started.headers.location).toBe(`/admin/api/deliveries/bulk/${started.body.id}`);
    await eventually(async () =>
      expect(await progressOf(started.body.id)).toMatchObject({
        state: 'done',
        queued: 2,
        total: 2,
      }),
    );
    await env.completedRuns(4);
    await eventually(async () => {
      const { body } = await request(app)
        .get('/admin/api/deliveries?state=failed')
        .set('Authorization', bearer);
      expect(body.total).toBe(0);
    });
  });

  it('runs a handler added later over the deliveries it never saw (a backfill)', async () => {
    // A worker that has the new handler starts; it says so in the roster.
    laterWorker = await env.startWorker({ handlers: [...handlers, lateHandler] });
    await worker.close(1_000);
    const plan = await post('/admin/api/deliveries/bulk/plan', {
      action: 'run-again',
      handler: 'late',
      since: '1h',
    }).expect(200);
    expect(plan.body).toMatchObject({ deliveries: 4, runs: 4 });
    const started = await post('/admin/api/deliveries/bulk', {
      action: 'run-again',
      handler: 'late',
      since: '1h',
    }).expect(202);
    await eventually(async () =>
      expect(await progressOf(started.body.id)).toMatchObject({ state: 'done', queued: 4 }),
    );
    await eventually(() => expect(late.sort()).toEqual(['fb_b1', 'fb_b2', 'fb_b3', 'fb_b4']));
    // The history says so too.
    await eventually(async () => {
      const { body } = await request(app)
        .get('/admin/api/deliveries?q=fb_b2')
        .set('Authorization', bearer);
      expect(body.deliveries[0].runs).toEqual(
        expect.arrayContaining([expect.objectContaining({ handler: 'late', state: 'completed' })]),
      );
    });
  });

  it('runs a handler again on a delivery whose run job retention removed', async () => {
    const key = 'feedback.created:fb_b4';
    const { body: delivery } = await request(app)
      .get(`/admin/api/deliveries/${encodeURIComponent(key)}`)
      .set('Authorization', bearer)
      .expect(200);
    const run = delivery.runs.find((r: { handler: string }) => r.handler === 'picky');
    const runJob = await laterWorker.runQueues.of('picky').getJob(run.runId);
    await runJob!.remove();
    const before = pickyRan.filter((id) => id === 'fb_b4').length;
    const plan = await post('/admin/api/deliveries/bulk/plan', {
      action: 'run-again',
      handler: 'picky',
      q: 'fb_b4',
    }).expect(200);
    expect(plan.body).toMatchObject({ deliveries: 1, runs: 1 });
    const started = await post('/admin/api/deliveries/bulk', {
      action: 'run-again',
      handler: 'picky',
      q: 'fb_b4',
    }).expect(202);
    await eventually(async () =>
      expect(await progressOf(started.body.id)).toMatchObject({ state: 'done', queued: 1 }),
    );
    await eventually(() =>
      expect(pickyRan.filter((id) => id === 'fb_b4')).toHaveLength(before + 1),
    );
  });

  it.each([
    [
      { action: 'run-again', handler: 'nobody-has-it' },
      /no worker has started with a handler named "nobody-has-it"/,
    ],
    [{ action: 'run-again' }, /handler: run-again needs a handler/],
    [{ action: 'retry', handler: 'picky' }, /handler: only run-again takes a handler/],
    [{ action: 'retry', since: 'yesterday' }, /since: expected a number and a unit/],
    [{ action: 'retry', since: '0h' }, /^since: expected a span longer than zero/],
    [{ action: 'delete' }, /action: /],
    [{ action: 'retry', sort: 'title' }, /sort: unknown field/],
    [[], /action: /],
  ])('answers 400 to %j', async (body, detail) => {
    const response = await post('/admin/api/deliveries/bulk', body).expect(400);
    expect(response.body).toMatchObject({ code: 'BAD_REQUEST' });
    expect(response.body.detail).toMatch(detail);
  });

  it('answers the plan 400 for a span of zero, naming since', async () => {
    const response = await post('/admin/api/deliveries/bulk/plan', {
      action: 'run-again',
      handler: 'picky',
      since: '0m',
    }).expect(400);
    expect(response.body.detail).toMatch(/^since: expected a span longer than zero/);
  });

  it('refuses a cross-site POST, and one without the token', async () => {
    const refused = await post('/admin/api/deliveries/bulk', { action: 'retry' })
      .set('Sec-Fetch-Site', 'cross-site')
      .expect(403);
    expect(refused.body).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
    await request(app).post('/admin/api/deliveries/bulk').send({ action: 'retry' }).expect(401);
  });
});

describe('bulk actions in one process', () => {
  it('runs two at once at most, however many are asked for in the same moment', async () => {
    const { connection, prefix } = env;
    const bulk = createBulkActions({
      connection,
      prefix,
      history: createHistorySearch({ connection, prefix, ttlSeconds: env.dedupeTtlSeconds }),
      deliveries: env.deliveries,
      runQueues: laterWorker.runQueues,
      dedupeTtlSeconds: env.dedupeTtlSeconds,
      retention: handlerRunRetention(3_600),
    });
    // Asked for together: none of them has started when the next is asked for.
    const asked = [1, 2, 3].map(() => bulk.start({ action: 'retry', q: 'no-such-words' }));
    const settled = await Promise.allSettled(asked);
    expect(settled.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(BulkBusyError);
    await bulk.close();
  });
});
