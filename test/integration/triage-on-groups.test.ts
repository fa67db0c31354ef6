/**
 * Auto-triage on real grouping: similar reports routed by two workers through real Redis; a
 * rule on the group fires once per crossing, PATCHes the group's first record and notifies; an
 * operator's run again sees the facts the first run saw.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import type { SimilarFacts } from '../../src/similar/similar-facts.js';
import { defineHandler } from '../../src/worker/handler.js';
import {
  createTriageHandler,
  TRIAGE_HANDLER_NAME,
} from '../../src/worker/triage/triage-handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const SECRET_PATH = '/services/T0000/B0000/s3cr3tW3bh00kT0k3n';
let api: FakeFeedbackApi;
let chat: FakeFeedbackApi;
let env: TestWorkerEnv;

beforeAll(async () => {
  [api, chat] = await Promise.all([startFakeFeedbackApi(), startFakeFeedbackApi()]);
  chat.respondWith(() => ({ status: 200 }));
});
afterAll(async () => {
  await Promise.all([api.close(), chat.close()]);
});
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(async () => {
  await env.close();
});

function checkoutReport(n: number): FeedbackRecord {
  return {
    id: `fb_pay_${n}`,
    project_id: 'prj_shop',
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey (${n}).`,
    url: 'https://shop.example/checkout',
  };
}

describe('auto-triage on groups', () => {
  it('fires once when the group reaches 5 within the hour, on two workers', async () => {
    const rules = parseTriageRules(
      JSON.stringify({
        rules: [
          {
            name: 'incident',
            when: { similar: { atLeast: 5, within: '1h' } },
            target: 'first',
            set: { priority_id: 1 },
            notify: { urlFrom: 'SLACK_WEBHOOK_URL' },
          },
        ],
      }),
      'test',
    );
    const handler = () =>
      createTriageHandler({
        rules,
        readVariable: () => `${chat.url}${SECRET_PATH}`,
      });
    const similar = { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 100_000 };
    const apiClient = createApiClient({ baseUrl: api.url, token: API_TOKEN });
    await env.startWorker({ api: apiClient, handlers: [handler()], similar });
    await env.startWorker({ api: apiClient, handlers: [handler()], similar });
    await env.deliver(checkoutReport(0));
    await env.completedRuns(1);
    await Promise.all(Array.from({ length: 8 }, (_, n) => env.deliver(checkoutReport(n + 1))));
    await env.completedRuns(9);

    expect(chat.requests).toHaveLength(1);
    expect(chat.requests[0]?.body).toMatchObject({ rule: 'incident', groupSize: 5 });
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_0', body: { priority_id: 1 } },
    ]);
    expect(JSON.stringify(env.logs)).not.toContain(SECRET_PATH);
  });

  it('runs again with the facts of its first run: the crossing, the size, the first', async () => {
    const rules = parseTriageRules(
      JSON.stringify({
        rules: [
          {
            name: 'incident',
            when: { similar: { atLeast: 3, within: '1h' } },
            target: 'first',
            set: { priority_id: 1 },
          },
        ],
      }),
      'test',
    );
    const earlier = api.requests.length;
    const seen: (SimilarFacts | undefined)[] = [];
    const watch = defineHandler({
      name: 'watch',
      handle: ({ record, similar }) => {
        if (record.id === 'fb_pay_2') seen.push(similar);
      },
    });
    const worker = await env.startWorker({
      api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
      handlers: [createTriageHandler({ rules }), watch],
      similar: { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 100_000 },
      concurrency: 1,
    });
    for (let n = 0; n < 3; n += 1) await env.deliver(checkoutReport(n));
    await env.completedRuns(6);
    await env.historyHolds(3);
    const patchedFirst = {
      method: 'PATCH',
      path: '/v1/feedback/fb_pay_0',
      body: { priority_id: 1 },
    };
    const patches = () =>
      api.requests.slice(earlier).map(({ method, path, body }) => ({ method, path, body }));
    expect(patches()).toEqual([patchedFirst]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ group: { size: 3 }, crossed: [{ atLeast: 3 }] });

    // Retention removed the third delivery's runs; the operator runs both handlers again on it.
    for (const handler of [TRIAGE_HANDLER_NAME, 'watch']) {
      const run = (await worker.runQueues.of(handler).getJobs(['completed'])).find(
        (job) => job.data.delivery.record.id === 'fb_pay_2',
      );
      await run!.remove();
    }
    const app = createTestAdminApp(env, worker.runQueues, 'triage-token', { similar: true });
    for (const handler of [TRIAGE_HANDLER_NAME, 'watch']) {
      await request(app)
        .post('/admin/api/deliveries/bulk')
        .set('Authorization', 'Bearer triage-token')
        .send({ action: 'run-again', handler, q: 'fb_pay_2' })
        .expect(202);
    }
    await vi.waitFor(() => expect(seen).toHaveLength(2), { timeout: 10_000, interval: 50 });
    expect(seen[1]).toEqual(seen[0]);
    await vi.waitFor(() => expect(patches()).toEqual([patchedFirst, patchedFirst]), {
      timeout: 10_000,
      interval: 50,
    });
    // Its one run, started again once completed (the two removed are back), keeps them too.
    await env.completedRuns(6);
    const again = await request(app)
      .post('/admin/api/deliveries/feedback.created%3Afb_pay_2/runs/watch/run-again')
      .set('Authorization', 'Bearer triage-token')
      .expect(200);
    expect(again.body.status).toBe('queued');
    await vi.waitFor(() => expect(seen).toHaveLength(3), { timeout: 10_000, interval: 50 });
    expect(seen[2]).toEqual(seen[0]);
  });
});
