/**
 * The dead letter groups failures with one cause: runs whose reasons differ only in a record's
 * id make one group, each run keeping its full reason, and the group's "Retry all" retries them
 * all, whichever of the group's reasons it is given (issue 29, item 3).
 */
import request from 'supertest';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'dead-letter-token-3f9a';
const bearer = `Bearer ${TOKEN}`;
let env: TestWorkerEnv;
let app: ReturnType<typeof createTestAdminApp>;
/** Attempts per record, to see which runs a retry queued. */
const attempts = new Map<string, number>();

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const worker = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'sync-crm',
        attempts: 1,
        handle: ({ record }) => {
          attempts.set(record.id, (attempts.get(record.id) ?? 0) + 1);
          if (record.id === 'fb_other') throw new Error('the CRM is read-only today');
          throw new Error(`the API answered 404 for feedback ${record.feedback_id}`);
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_123', feedback_id: 123 });
  await env.deliver({ id: 'fb_456', feedback_id: 456 });
  await env.deliver({ id: 'fb_789', feedback_id: 789 });
  await env.deliver({ id: 'fb_other' });
  await env.failedRuns(4);
  app = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(async () => {
  await env?.close();
});

it('puts runs that failed with one cause in one group, each with its own reason', async () => {
  const { body } = await request(app).get('/admin/api/dead-letter').set('Authorization', bearer);
  expect(body.total).toBe(4);
  expect(body.groups).toHaveLength(2);
  const [notFound, other] = body.groups;
  expect(notFound).toMatchObject({
    handler: 'sync-crm',
    cause: 'the API answered 404 for feedback …',
  });
  expect(notFound.runs.map((run: { reason: string }) => run.reason).sort()).toEqual([
    'the API answered 404 for feedback 123',
    'the API answered 404 for feedback 456',
    'the API answered 404 for feedback 789',
  ]);
  expect(other).toMatchObject({ cause: 'the CRM is read-only today', runs: [{}] });

  const page = await request(app).get('/admin/dead-letter').set('Authorization', bearer);
  expect(page.text).toContain('sync-crm · 3 runs');
  expect(page.text).toContain('Retry all 3');
  expect(page.text).toContain('sync-crm · 1 run<');
  for (const id of [123, 456, 789]) {
    expect(page.text, 'each run’s full reason').toContain(
      `the API answered 404 for feedback ${id}`,
    );
  }
});

it('retries the whole group from the reason of any one of its runs, and no other run', async () => {
  const retried = await request(app)
    .post('/admin/dead-letter/retry')
    .set('Authorization', bearer)
    .set('Sec-Fetch-Site', 'same-origin')
    .type('form')
    .send({ handler: 'sync-crm', reason: 'the API answered 404 for feedback 456' })
    .expect(303);
  expect(retried.headers.location).toBe('/admin/dead-letter?done=retried');
  await vi.waitFor(
    () =>
      expect(Object.fromEntries(attempts)).toEqual({
        fb_123: 2,
        fb_456: 2,
        fb_789: 2,
        fb_other: 1,
      }),
    { timeout: 10_000, interval: 50 },
  );
});
