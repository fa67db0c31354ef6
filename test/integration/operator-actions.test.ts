/**
 * What operators do to runs, against real workers and the console's JSON API: retry the whole
 * dead letter, see and act on a run a backfill added, retry a failed routing in bulk. Each of
 * these once missed runs or acted on some twice (issue 28, defects 2, 4 and 5).
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { afterEach, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp, RUN_RETENTION_SECONDS } from '../helpers/admin-app.js';
import { countRuns } from '../helpers/completed-runs.js';
import { refusingTheRunOf } from '../helpers/refusing-redis-user.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'operator-token-5e2c';
const bearer = `Bearer ${TOKEN}`;
const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function setUp(): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  return env;
}

/** Until it holds: worker round trips on a busy machine take their time. */
const eventually = <T>(check: () => T | Promise<T>, timeout = 10_000) =>
  vi.waitFor(check, { timeout, interval: 50 });

it('retries every failed run once, the oldest included, however fast they fail again', async () => {
  const env = await setUp();
  const calls = new Map<string, number>();
  const runtime = await env.startWorker({
    concurrency: 50,
    handlers: [
      defineHandler({
        name: 'refuses',
        attempts: 1,
        handle: ({ record }) => {
          calls.set(record.id, (calls.get(record.id) ?? 0) + 1);
          throw new Error('refused');
        },
      }),
    ],
  });
  // More than one page of the retry, so a retried run that failed again meanwhile could be
  // taken a second time, and the oldest never.
  const ids = Array.from({ length: 1_200 }, (_, n) => `fb_all_${n}`);
  for (const id of ids) await env.deliver({ id });
  await env.failedRuns(ids.length, 30_000);

  expect(await env.deadLetter().retryAll(), 'runs queued again').toBe(ids.length);
  await eventually(async () => {
    expect(await countRuns(runtime.runQueues, 'failed'), 'failed again').toBe(ids.length);
    expect(
      [...calls.values()].reduce((sum, n) => sum + n, 0),
      'attempts',
    ).toBe(2 * ids.length);
  }, 30_000);
  const twice = ids.filter((id) => calls.get(id) !== 2);
  expect(twice, 'runs not attempted exactly twice').toEqual([]);
}, 90_000);

it("shows a backfilled run on its delivery's page and API, and runs it again", async () => {
  const env = await setUp();
  const late: string[] = [];
  const first = defineHandler({ name: 'first', handle: () => undefined });
  const worker = await env.startWorker({ handlers: [first] });
  const { key } = await env.deliver({ id: 'fb_backfilled', title: 'Backfill me' });
  await env.completedRuns(1);
  await env.historyHolds(1);
  await worker.close(1_000);
  // A release adds a handler, and an operator runs it over what came before.
  const later = await env.startWorker({
    handlers: [
      first,
      defineHandler({ name: 'late', handle: ({ record }) => void late.push(record.id) }),
    ],
  });
  const app = createTestAdminApp(env, later.runQueues, TOKEN);
  const post = (path: string, body?: object) =>
    request(app).post(path).set('Authorization', bearer).send(body);
  const started = await post('/admin/api/deliveries/bulk', {
    action: 'run-again',
    handler: 'late',
    q: 'fb_backfilled',
  }).expect(202);
  await eventually(async () => {
    const progress = await request(app)
      .get(`/admin/api/deliveries/bulk/${started.body.id}`)
      .set('Authorization', bearer);
    expect(progress.body).toMatchObject({ state: 'done', queued: 1 });
    expect(late).toEqual(['fb_backfilled']);
  });
  // Kept as the worker's own runs are (COMPLETED_JOB_RETENTION_SECONDS), not for the default day.
  const backfilled = await later.runQueues.of('late').getJobs(['completed']);
  expect(backfilled.map((job) => job.opts.removeOnComplete)).toEqual([
    expect.objectContaining({ age: RUN_RETENTION_SECONDS }),
  ]);

  const path = `/admin/api/deliveries/${encodeURIComponent(key)}`;
  await eventually(async () => {
    const { body } = await request(app).get(path).set('Authorization', bearer).expect(200);
    expect(
      body.runs.map((run: { handler: string; state: string }) => [run.handler, run.state]),
    ).toEqual([
      ['first', 'completed'],
      ['late', 'completed'],
    ]);
  });
  const again = await post(`${path}/runs/late/run-again`).expect(200);
  expect(again.body).toMatchObject({ handler: 'late', status: 'queued' });
  await eventually(() => expect(late, 'the run again').toEqual(['fb_backfilled', 'fb_backfilled']));
});

it('retries a failed routing in bulk, as it does a failed run', async () => {
  const env = await setUp();
  const refusing = await refusingTheRunOf(env.prefix, 'b');
  cleanup.unshift(() => refusing.remove());
  let bRuns = 0;
  const handlers = [defineHandler({ name: 'b', handle: () => void (bRuns += 1) })];
  const worker = await env.startWorker({ handlers, redisUrl: refusing.url });
  // Its one attempt fails: adding b's run is refused, and the routing fails for good.
  await env.deliveries.add(
    'feedback.created',
    {
      key: 'feedback.created:fb_unrouted',
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { id: 'fb_unrouted', title: 'Never routed' },
    },
    { jobId: randomUUID() },
  );
  await env.historyHolds(1);
  const app = createTestAdminApp(env, worker.runQueues, TOKEN);
  const post = (path: string, body: object) =>
    request(app).post(path).set('Authorization', bearer).send(body);
  await refusing.allow();

  const plan = await post('/admin/api/deliveries/bulk/plan', {
    action: 'retry',
    q: 'fb_unrouted',
  }).expect(200);
  expect(plan.body).toMatchObject({ deliveries: 1, runs: 1 });
  const started = await post('/admin/api/deliveries/bulk', {
    action: 'retry',
    q: 'fb_unrouted',
  }).expect(202);
  await eventually(async () => {
    const progress = await request(app)
      .get(`/admin/api/deliveries/bulk/${started.body.id}`)
      .set('Authorization', bearer);
    expect(progress.body).toMatchObject({ state: 'done', queued: 1, skipped: 0 });
    expect(await env.deliveries.getFailedCount(), 'failed routings').toBe(0);
    expect(bRuns, "b's run, once routed").toBe(1);
  });
});
