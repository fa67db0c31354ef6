/**
 * Running a handler again on a delivery it handled, from the console and its API: a completed run
 * (its job goes back to waiting, its success marker gone), the same run again, every completed
 * run at once, and what is refused (a failed run, a run under way, an unknown handler or
 * delivery). The page asks before it acts. A real worker over a real Redis; the feedback API is a
 * local HTTP server that counts the PATCHes.
 */
import { UnrecoverableError } from 'bullmq';
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { runSuccessKey, succeededMarkerKey } from '../../src/runs/run-queues.js';
import { defineHandler } from '../../src/worker/handler.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import { createTriageHandler } from '../../src/worker/triage/triage-handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'again-token-3b8f0d';
const KEY = 'feedback.created:fb_a1';
const FAILED_KEY = 'feedback.created:fb_a2';
let env: TestWorkerEnv;
let api: FakeFeedbackApi;
let app: Express;
const noted: string[] = [];

beforeAll(async () => {
  env = await createTestWorkerEnv();
  api = await startFakeFeedbackApi();
  const rules = parseTriageRules(
    JSON.stringify({
      rules: [{ name: 'unhappy', when: { field: 'rating', lte: 2 }, set: { priority_id: 4 } }],
    }),
    'test',
  );
  const worker = await env.startWorker({
    api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
    handlers: [
      createTriageHandler({ rules }),
      defineHandler({
        name: 'notes',
        handle: ({ record }) => {
          if (record.title === 'refuse') throw new UnrecoverableError('notes refused it');
          noted.push(record.id);
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_a1', title: 'Cannot log in', rating: 1 });
  await env.deliver({ id: 'fb_a2', title: 'refuse', rating: 5 });
  await env.completedRuns(3);
  await env.failedRuns(1);
  app = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(async () => {
  await env?.close();
  await api?.close();
});

const patches = () => api.requests.filter((req) => req.method === 'PATCH').length;
const post = (path: string) =>
  request(app)
    .post(path)
    .set('Authorization', `Bearer ${TOKEN}`)
    .set('Sec-Fetch-Site', 'same-origin');
const runAgainPath = (key: string, handler: string) =>
  `/admin/api/deliveries/${encodeURIComponent(key)}/runs/${handler}/run-again`;
const triageRun = async () => {
  const { body } = await request(app)
    .get(`/admin/api/deliveries/${encodeURIComponent(KEY)}`)
    .set('Authorization', `Bearer ${TOKEN}`)
    .expect(200);
  type Run = { handler: string; runId: string; state: string; history: unknown[] };
  return (body as { runs: Run[] }).runs.find((run) => run.handler === 'auto-triage')!;
};

describe('POST /admin/api/deliveries/{key}/runs/{handler}/run-again', () => {
  it("runs a completed run again, once, whatever its earlier life's success marker says", async () => {
    expect(patches()).toBe(1);
    // As a worker leaves one when Redis was away at the completion, or with ACK_REPLICAS.
    const marker = succeededMarkerKey(env.prefix, runSuccessKey('auto-triage', KEY));
    await env.connection.set(marker, '1');

    const { body } = await post(runAgainPath(KEY, 'auto-triage')).expect(200);
    expect(body).toEqual({ deliveryKey: KEY, handler: 'auto-triage', status: 'queued' });
    await vi.waitFor(async () => expect(await triageRun()).toMatchObject({ state: 'completed' }), {
      timeout: 5_000,
    });
    expect(patches()).toBe(2);
    expect((await triageRun()).history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'completed' }),
      expect.objectContaining({ attempt: 1, outcome: 'completed' }),
    ]);
  });

  it('runs it again through its job the next time, with all of its attempts', async () => {
    await post(runAgainPath(KEY, 'auto-triage')).expect(200);
    await vi.waitFor(() => expect(patches()).toBe(3), { timeout: 5_000 });
    await vi.waitFor(async () => expect(await triageRun()).toMatchObject({ state: 'completed' }));
    const history = (await triageRun()).history;
    expect(history).toHaveLength(3);
    expect(history[2]).toMatchObject({ attempt: 1, of: 8, outcome: 'completed' });
  });

  it('refuses a failed run (409), and 404s an unknown handler or delivery', async () => {
    const failed = await post(runAgainPath(FAILED_KEY, 'notes')).expect(409);
    expect(failed.body).toMatchObject({ code: 'RUN_NOT_COMPLETED' });
    const handler = await post(runAgainPath(KEY, 'no-such-handler')).expect(404);
    expect(handler.body).toMatchObject({ code: 'NOT_FOUND' });
    await post(runAgainPath('feedback.created:fb_never', 'notes')).expect(404);
    await post('/admin/api/deliveries/feedback.created%3Afb_never/run-again').expect(404);
  });
});

describe('POST /admin/api/deliveries/{key}/run-again', () => {
  it('runs every completed run again and says what became of each', async () => {
    const before = noted.length;
    const { body } = await post(
      `/admin/api/deliveries/${encodeURIComponent(FAILED_KEY)}/run-again`,
    ).expect(200);
    // fb_a2: triage completed (nothing to PATCH), notes failed: only triage runs again.
    expect(body).toEqual({
      deliveryKey: FAILED_KEY,
      runs: [
        { handler: 'auto-triage', status: 'queued' },
        { handler: 'notes', status: 'not completed' },
      ],
    });
    expect(noted.length).toBe(before);
  });
});

describe('the console page', () => {
  it('asks first, runs nothing without the confirmation, and runs once confirmed', async () => {
    const key = encodeURIComponent(KEY);
    const page = await request(app)
      .get(`/admin/deliveries/${key}`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200);
    expect(page.text).toContain(`href="/admin/deliveries/${key}/run-again?handler=notes"`);

    const asking = await request(app)
      .get(`/admin/deliveries/${key}/run-again?handler=notes`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200);
    expect(asking.text).toContain('may happen twice');
    expect(asking.text).toContain('name="confirm" value="yes"');

    const before = noted.length;
    const unconfirmed = await post(`/admin/deliveries/${key}/run-again`)
      .type('form')
      .send({ handler: 'notes' })
      .expect(303);
    expect(unconfirmed.headers.location).toBe(`/admin/deliveries/${key}/run-again?handler=notes`);

    const confirmed = await post(`/admin/deliveries/${key}/run-again`)
      .type('form')
      .send({ handler: 'notes', confirm: 'yes' })
      .expect(303);
    expect(confirmed.headers.location).toBe(`/admin/deliveries/${key}?done=queued-again`);
    await vi.waitFor(() => expect(noted.length).toBe(before + 1), { timeout: 5_000 });
    expect(noted.filter((id) => id === 'fb_a1')).toHaveLength(2);
  });

  it('refuses a cross-site POST, whatever credentials it carries', async () => {
    const response = await request(app)
      .post(`/admin/deliveries/${encodeURIComponent(KEY)}/run-again`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .set('Sec-Fetch-Site', 'cross-site')
      .type('form')
      .send({ handler: 'notes', confirm: 'yes' })
      .expect(403);
    expect(response.body).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
  });
});
