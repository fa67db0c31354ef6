/**
 * An operator takes a group's first delivery out: the group keeps its id, and its first is then
 * its earliest member left, in the console's API, in what later members are told, and in the
 * record a `"target": "first"` rule PATCHes. Real worker, real Redis, real HTTP.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { SimilarFacts } from '../../src/similar/similar-facts.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
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

const TOKEN = 'detach-first-token';
let api: FakeFeedbackApi;
let env: TestWorkerEnv;

beforeAll(async () => {
  api = await startFakeFeedbackApi();
});
afterAll(() => api.close());
beforeEach(async () => {
  api.requests.length = 0;
  env = await createTestWorkerEnv();
});
afterEach(() => env.close());

/** The same problem; after the first, each says it is on a phone, so later ones match them best. */
function checkoutReport(n: number): FeedbackRecord {
  return {
    id: `fb_pay_${n}`,
    project_id: 'prj_shop',
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey${n === 0 ? '' : ' on my phone'} (${n}).`,
    url: 'https://shop.example/checkout',
  };
}

const first = (n: number) => ({ key: `feedback.created:fb_pay_${n}`, recordId: `fb_pay_${n}` });

describe("detaching a group's first delivery", () => {
  it('makes its earliest member left the first, for the API, later members and a rule', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    const worker = await env.startWorker({
      api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
      handlers: [
        createTriageHandler({
          rules: parseTriageRules(
            JSON.stringify({
              rules: [
                {
                  name: 'incident',
                  when: { similar: { atLeast: 4, within: '1h' } },
                  target: 'first',
                  set: { priority_id: 1 },
                },
              ],
            }),
            'test',
          ),
        }),
        defineHandler({
          name: 'watch',
          handle: ({ record, similar }) => void seen.set(record.id, similar),
        }),
      ],
      similar: { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 1_000 },
      concurrency: 1,
    });
    const app = createTestAdminApp(env, worker.runQueues, TOKEN, { similar: true });
    const get = (path: string) =>
      request(app).get(path).set('Authorization', `Bearer ${TOKEN}`).expect(200);
    const deliver = async (n: number) => {
      await env.deliver(checkoutReport(n));
      await vi.waitFor(() => expect(seen.has(`fb_pay_${n}`)).toBe(true), {
        timeout: 10_000,
        interval: 20,
      });
      return seen.get(`fb_pay_${n}`)!;
    };
    for (let n = 0; n < 3; n += 1) await deliver(n);
    const { id } = seen.get('fb_pay_2')!.group;
    expect((await get(`/admin/api/groups/${id}`)).body.first).toMatchObject(first(0));

    await request(app)
      .post('/admin/api/deliveries/feedback.created:fb_pay_0/detach')
      .set('Authorization', `Bearer ${TOKEN}`)
      .set('Sec-Fetch-Site', 'same-origin')
      .expect(200);

    // The group keeps its id; its first is its earliest member left.
    const group = (await get(`/admin/api/groups/${id}`)).body;
    expect(group).toMatchObject({ id, size: 2, first: first(1) });
    expect(group.deliveries.map((d: { recordId: string }) => d.recordId)).toEqual([
      'fb_pay_2',
      'fb_pay_1',
    ]);
    const listed = (await get('/admin/api/groups')).body.groups;
    expect(listed.find((g: { id: string }) => g.id === id)).toMatchObject({ first: first(1) });
    // A member that joined before the detach is shown the first as it is now.
    const delivery = (await get('/admin/api/deliveries/feedback.created:fb_pay_2')).body;
    expect(delivery.similar.group).toMatchObject({ id, first: first(1) });

    // Later members are told so, and the 4th within the hour PATCHes it, not the one taken out.
    expect((await deliver(3)).group).toMatchObject({ id, size: 3, first: first(1) });
    expect((await deliver(4)).group).toMatchObject({ id, size: 4, first: first(1) });
    await vi.waitFor(() => expect(api.requests).toHaveLength(1), { timeout: 10_000 });
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_1', body: { priority_id: 1 } },
    ]);
    // A run again of a member sees the first as it is now too.
    const groups = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: env.dedupeTtlSeconds,
    });
    expect((await groups.asRouted('feedback.created:fb_pay_2'))?.group.first).toEqual(first(1));
  });
});
