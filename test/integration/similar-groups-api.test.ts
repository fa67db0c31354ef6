/**
 * The console's JSON API of groups of similar feedback over real HTTP, against deliveries a real
 * worker grouped: the list, one group, a delivery's `similar`, detach, bad input, and the answers
 * from a console given no reader of groups.
 */
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'console-token-7a1f3b';
const bearer = `Bearer ${TOKEN}`;

let env: TestWorkerEnv;
let app: Express;
let off: Express;

const report = (n: number): FeedbackRecord => ({
  id: `fb_pay_${n}`,
  project_id: 'prj_shop',
  title: 'Pay button stays grey at checkout',
  description: `When I click pay nothing happens and the button stays grey (${n}).`,
});
const other: FeedbackRecord = {
  id: 'fb_dark',
  project_id: 'prj_shop',
  title: 'Please add a dark mode',
  description: 'My eyes hurt at night.',
};

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const worker = await env.startWorker({
    handlers: [defineHandler({ name: 'noop', handle: () => {} })],
    similar: { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 1_000 },
    concurrency: 1,
  });
  for (const record of [report(0), report(1), report(2), other]) await env.deliver(record);
  await env.completedRuns(4);
  await env.historyHolds(4);
  app = createTestAdminApp(env, worker.runQueues, TOKEN, { similar: true });
  off = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(() => env?.close());

const get = (path: string, on = app) => request(on).get(path).set('Authorization', bearer);
const post = (path: string, on = app) =>
  request(on).post(path).set('Authorization', bearer).set('Sec-Fetch-Site', 'same-origin');

describe('the groups API', () => {
  it('lists the groups of two or more of the last day, the fastest-growing first', async () => {
    const { body } = await get('/admin/api/groups').expect(200);
    expect(body.since).toBe('24h');
    // The report alone in its group is not listed (a group of one is listed once another joins).
    expect(body.groups.map((group: { size: number }) => group.size)).toEqual([3]);
    const [pay] = body.groups;
    expect(pay).toMatchObject({
      project: 'prj_shop',
      size: 3,
      first: { key: 'feedback.created:fb_pay_0', recordId: 'fb_pay_0' },
    });
    expect(pay.first.title).toBe('Pay button stays grey at checkout');
    expect(pay.arrivals).toHaveLength(24);
    expect(pay.arrivals.reduce((a: number, b: number) => a + b, 0)).toBe(3);
    expect(
      (await get('/admin/api/groups?since=7d&project=prj_other').expect(200)).body.groups,
    ).toEqual([]);
  });

  it('answers 400 with a problem for a bad since, limit or parameter', async () => {
    for (const query of ['since=yesterday', 'limit=0', 'limit=201', 'colour=red']) {
      const { body } = await get(`/admin/api/groups?${query}`).expect(400);
      expect(body).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
    }
  });

  it('answers 400 naming since for a span of zero, which would list nothing', async () => {
    for (const since of ['0m', '0h', '0d', '000m']) {
      const { body } = await get(`/admin/api/groups?since=${since}`).expect(400);
      expect(body).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
      expect(body.detail).toMatch(/^since: expected a span longer than zero/);
    }
  });

  it('answers the Groups page as the API: its parameters checked alike, its limit kept', async () => {
    const page = await get('/admin/groups?project=prj_shop&limit=1').expect(200);
    expect(page.text).toContain('Pay button stays grey at checkout');
    const twice = await get('/admin/groups?project=prj_shop&project=prj_other').expect(400);
    expect(twice.body.detail).toMatch(/^project: expected one value/);
    for (const query of ['limit=0', 'limit=201', 'colour=red', 'since=30m']) {
      const { body } = await get(`/admin/groups?${query}`).expect(400);
      expect(body).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
    }
  });

  it('shows one group with its deliveries, newest first, and 404 for an unknown one', async () => {
    const [pay] = (await get('/admin/api/groups').expect(200)).body.groups;
    const { body } = await get(`/admin/api/groups/${pay.id}`).expect(200);
    expect(body.deliveries.map((d: { recordId: string }) => d.recordId)).toEqual([
      'fb_pay_2',
      'fb_pay_1',
      'fb_pay_0',
    ]);
    // Titles from the delivery history: grouping keeps none.
    expect(body.deliveries.map((d: { title: string }) => d.title)).toEqual(
      Array(3).fill('Pay button stays grey at checkout'),
    );
    expect(body.first.title).toBe('Pay button stays grey at checkout');
    expect((await get('/admin/api/groups/bm8.bm8').expect(404)).body).toMatchObject({
      code: 'NOT_FOUND',
    });
    await get('/admin/api/groups/not%20an%20id').expect(404);
    // Of a project kept: a group of one is looked for by its first entry, whose id this is not,
    // nor can be (Redis's entry ids are two 64-bit numbers).
    const shop = Buffer.from('prj_shop').toString('base64url');
    await get(`/admin/api/groups/${shop}.1-0`).expect(404);
    await get(`/admin/api/groups/${shop}.99999999999999999999999-0.d`).expect(404);
  });

  it("gives a delivery's group and best matches under `similar`", async () => {
    const { body } = await get('/admin/api/deliveries/feedback.created:fb_pay_2').expect(200);
    expect(body.similar.group).toMatchObject({
      size: 3,
      first: { key: 'feedback.created:fb_pay_0', recordId: 'fb_pay_0' },
    });
    expect(body.similar.matches.map((m: { recordId: string }) => m.recordId)).toEqual([
      'fb_pay_0',
      'fb_pay_1',
    ]);
    expect(body.similar.matches.map((m: { title: string }) => m.title)).toEqual([
      'Pay button stays grey at checkout',
      'Pay button stays grey at checkout',
    ]);
    expect(body.similar.matches[0].score).toBeGreaterThan(DEFAULT_SIMILAR_THRESHOLD);
    expect(body.similar.matches[0].score).toBeLessThanOrEqual(1);
  });

  it('detaches a delivery from its group, and answers 404 for an unknown one', async () => {
    const { body } = await post('/admin/api/deliveries/feedback.created:fb_pay_1/detach').expect(
      200,
    );
    expect(body).toMatchObject({ status: 'detached', group: { size: 1 } });
    expect(
      (await post('/admin/api/deliveries/feedback.created:fb_pay_1/detach').expect(200)).body
        .status,
    ).toBe('alone');
    await post('/admin/api/deliveries/feedback.created:nobody/detach').expect(404);
    const refused = await request(app)
      .post('/admin/api/deliveries/feedback.created:fb_pay_2/detach')
      .set('Authorization', bearer)
      .set('Sec-Fetch-Site', 'cross-site')
      .expect(403);
    expect(refused.body).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
  });

  it('answers an empty list and 404s from a console given no reader of groups (an embedder)', async () => {
    expect((await get('/admin/api/groups', off).expect(200)).body.groups).toEqual([]);
    await get('/admin/api/groups/bm8.bm8', off).expect(404);
    await post('/admin/api/deliveries/feedback.created:fb_pay_0/detach', off).expect(404);
    const { body } = await get('/admin/api/deliveries/feedback.created:fb_pay_0', off).expect(200);
    expect(body).not.toHaveProperty('similar');
  });
});
