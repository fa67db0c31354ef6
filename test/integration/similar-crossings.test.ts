/**
 * A crossing is found whichever worker routes the delivery that makes it: workers with different
 * handlers, where the one that routes the crossing delivery does not run the rule, through real
 * workers and Redis (the roster carries each handler's windows).
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import { announceHandlers, readRoster } from '../../src/runs/handler-roster.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { defineHandler } from '../../src/worker/handler.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
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

const HOUR = 3_600_000;
const similar = { threshold: DEFAULT_SIMILAR_THRESHOLD, keep: 100_000 };
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

function checkoutReport(n: number): FeedbackRecord {
  return {
    id: `fb_pay_${n}`,
    project_id: 'prj_shop',
    title: 'Pay button stays grey at checkout',
    description: `When I click pay on the checkout page nothing happens and the button stays grey (${n}).`,
    url: 'https://shop.example/checkout',
  };
}

const triage = () =>
  createTriageHandler({
    rules: parseTriageRules(
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
    ),
  });

describe('a crossing routed by a worker without the rule', () => {
  it('is found, and the worker with the rule PATCHes the first', async () => {
    const apiClient = createApiClient({ baseUrl: api.url, token: API_TOKEN });
    // The worker with the rule writes its handlers to the roster, then stops: only the other
    // worker routes, and it adds the triage runs (the roster's handlers) for it to take later.
    const withRule = await env.startWorker({ api: apiClient, handlers: [triage()], similar });
    await withRule.close(1_000);
    const without = await env.startWorker({
      handlers: [defineHandler({ name: 'noop', handle: () => {} })],
      similar,
      concurrency: 1,
    });
    const groups = createSimilarGroups({
      connection: env.connection,
      prefix: env.prefix,
      ttlSeconds: env.dedupeTtlSeconds,
    });
    const crossed = [];
    for (let n = 0; n < 3; n += 1) {
      await env.deliver(checkoutReport(n));
      const facts = await vi.waitFor(
        async () => {
          const routed = await groups.asRouted(`feedback.created:fb_pay_${n}`);
          expect(routed).toBeDefined();
          return routed!;
        },
        { timeout: 10_000, interval: 20 },
      );
      expect(facts.group.size).toBe(n + 1);
      crossed.push(facts.crossed);
    }
    expect(crossed).toEqual([[], [], [{ atLeast: 3, withinMs: HOUR }]]);

    const app = createTestAdminApp(env, without.runQueues, 'crossing-token', { similar: true });
    const { body } = await request(app)
      .get('/admin/api/deliveries/feedback.created:fb_pay_2')
      .set('Authorization', 'Bearer crossing-token')
      .expect(200);
    expect(body.similar.crossed).toEqual([{ atLeast: 3, withinMs: HOUR }]);

    // The worker with the rule comes back and takes the runs the other added: one fires.
    const back = await env.startWorker({ api: apiClient, handlers: [triage()], similar });
    const triageRuns = back.runQueues.of(TRIAGE_HANDLER_NAME);
    await vi.waitFor(
      async () => expect((await triageRuns.getJobCounts('completed')).completed).toBe(3),
      { timeout: 10_000, interval: 50 },
    );
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_0', body: { priority_id: 1 } },
    ]);
  });
});

describe('the roster', () => {
  it("keeps each handler's windows, and reads an entry written without them", async () => {
    await announceHandlers(env.connection, env.prefix, [
      { name: 'triage', attempts: 8, similarWindows: [{ atLeast: 5, withinMs: HOUR }] },
    ]);
    // As a release before windows wrote it.
    await env.connection.hset(
      `${env.prefix}:handler-roster`,
      'older',
      JSON.stringify({ attempts: 3, events: ['feedback.created'], at: Date.now() }),
    );
    expect(await readRoster(env.connection, env.prefix)).toEqual([
      { name: 'older', attempts: 3, events: ['feedback.created'] },
      { name: 'triage', attempts: 8, similarWindows: [{ atLeast: 5, withinMs: HOUR }] },
    ]);
  });
});
