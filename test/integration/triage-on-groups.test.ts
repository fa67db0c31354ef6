/**
 * Auto-triage on real grouping: similar reports routed by two workers through real Redis; a
 * rule on the group fires once per crossing, PATCHes the group's first record and notifies.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import { createTriageHandler } from '../../src/worker/triage/triage-handler.js';
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
});
