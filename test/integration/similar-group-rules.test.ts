/**
 * Rules on a group through real workers, Redis and HTTP: a crossing is found whichever worker
 * routes the delivery that makes it (workers with different handlers: the roster carries each
 * handler's windows), and once an operator takes a group's first delivery out, the group keeps
 * its id and its first is its earliest member left, in the console's API, in what later members
 * are told, and in the record a `"target": "first"` rule PATCHes.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { createSimilarGroups } from '../../src/grouping/similar-groups.js';
import {
  announceHandlers,
  mergeByName,
  readRoster,
  readRunningHandlers,
} from '../../src/runs/handler-roster.js';
import { DEFAULT_SIMILAR_THRESHOLD } from '../../src/similar/grouping.js';
import type { SimilarFacts } from '../../src/similar/similar-facts.js';
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
const TOKEN = 'group-rules-token';
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

/** Auto-triage with one rule: at `atLeast` similar reports within the hour, PATCH the first. */
const incidentTriage = (atLeast: number) =>
  createTriageHandler({
    rules: parseTriageRules(
      JSON.stringify({
        rules: [
          {
            name: 'incident',
            when: { similar: { atLeast, within: '1h' } },
            target: 'first',
            set: { priority_id: 1 },
          },
        ],
      }),
      'test',
    ),
  });

/** What the console reads of grouping, on the test's connection. */
const consoleGroups = () =>
  createSimilarGroups({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });

const patches = () => api.requests.map(({ method, path, body }) => ({ method, path, body }));

/** Delivers reports 0 to count-1 and says what each crossed, as the console reads it. */
async function crossingsOf(count: number): Promise<unknown[]> {
  const groups = consoleGroups();
  const crossed = [];
  for (let n = 0; n < count; n += 1) {
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
  return crossed;
}

describe('a crossing routed by a worker without the rule', () => {
  it('is found, and the worker with the rule PATCHes the first', async () => {
    const apiClient = createApiClient({ baseUrl: api.url, token: API_TOKEN });
    // The worker with the rule writes its handlers to the roster, then stops: only the other
    // worker routes, and it adds the triage runs (the roster's handlers) for it to take later.
    const withRule = await env.startWorker({
      api: apiClient,
      handlers: [incidentTriage(3)],
      similar,
    });
    await withRule.close(1_000);
    const without = await env.startWorker({
      handlers: [defineHandler({ name: 'noop', handle: () => {} })],
      similar,
      concurrency: 1,
    });
    expect(await crossingsOf(3)).toEqual([[], [], [{ atLeast: 3, withinMs: HOUR }]]);

    const app = createTestAdminApp(env, without.runQueues, TOKEN, { similar: true });
    const { body } = await request(app)
      .get('/admin/api/deliveries/feedback.created:fb_pay_2')
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200);
    expect(body.similar.crossed).toEqual([{ atLeast: 3, withinMs: HOUR }]);

    // The worker with the rule comes back and takes the runs the other added: one fires.
    const back = await env.startWorker({ api: apiClient, handlers: [incidentTriage(3)], similar });
    const triageRuns = back.runQueues.of(TRIAGE_HANDLER_NAME);
    await vi.waitFor(
      async () => expect((await triageRuns.getJobCounts('completed')).completed).toBe(3),
      { timeout: 10_000, interval: 50 },
    );
    expect(patches()).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_0', body: { priority_id: 1 } },
    ]);
  });
});

const atThreeThenFive = [
  [],
  [],
  [{ atLeast: 3, withinMs: HOUR }],
  [],
  [{ atLeast: 5, withinMs: HOUR }],
];

/**
 * The new release's worker (`atLeast: 5`, the same handler name) routes five reports, writing its
 * handlers again every 20 ms; the old release's window (`atLeast: 3`) is crossed at the third.
 */
async function newReleaseCrossings(): Promise<void> {
  await env.startWorker({
    handlers: [incidentTriage(5)],
    similar,
    concurrency: 1,
    announceEveryMs: 20,
  });
  expect(await crossingsOf(5)).toEqual(atThreeThenFive);
}

describe('workers with a handler of the same name and other windows (a rolling deploy)', () => {
  it("count each one's windows: a crossing of the other's is found", async () => {
    // The old release's worker writes the roster, then stops: only the new release's routes.
    // The old one's windows still count (a stopped worker's do, 30 s).
    const older = await env.startWorker({ handlers: [incidentTriage(3)], similar });
    await older.close(1_000);
    await newReleaseCrossings();
  });

  it("count the windows a running worker of the previous release wrote under the handler's name", async () => {
    // As the previous release writes it, every 5 s while its worker runs.
    const previous = JSON.stringify({
      attempts: 5,
      events: ['feedback.created'],
      at: Date.now(),
      windows: [[3, HOUR]],
    });
    await env.connection.hset(`${env.prefix}:handler-roster`, TRIAGE_HANDLER_NAME, previous);
    await newReleaseCrossings();
    // Left as it is for that worker, whose workers read it too.
    expect(await env.connection.hget(`${env.prefix}:handler-roster`, TRIAGE_HANDLER_NAME)).toBe(
      previous,
    );
  });
});

describe('the roster', () => {
  it("keeps each handler's windows, and reads an entry written without them", async () => {
    await announceHandlers(
      env.connection,
      env.prefix,
      [{ name: 'triage', attempts: 8, similarWindows: [{ atLeast: 5, withinMs: HOUR }] }],
      { id: 'a', runningForMs: 60_000 },
    );
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
  it('keeps an entry per running worker, and lets go of the stopped ones', async () => {
    const workers = `${env.prefix}:handler-roster:workers`;
    // A worker whose time ran out (it stopped, or died, a while ago).
    await env.connection.hset(
      workers,
      'gone',
      JSON.stringify({ until: Date.now() - 1, handlers: [{ name: 'triage', attempts: 9 }] }),
    );
    const runningForMs = 60_000;
    await announceHandlers(
      env.connection,
      env.prefix,
      [{ name: 'triage', attempts: 8, similarWindows: [{ atLeast: 5, withinMs: HOUR }] }],
      { id: 'a', runningForMs },
    );
    await announceHandlers(
      env.connection,
      env.prefix,
      [
        {
          name: 'triage',
          attempts: 3,
          events: ['feedback.created'],
          similarWindows: [{ atLeast: 3, withinMs: HOUR }],
        },
      ],
      { id: 'b', runningForMs },
    );
    expect((await env.connection.hkeys(workers)).sort()).toEqual(['a', 'b']);
    expect(await env.connection.pttl(workers)).toBeGreaterThan(0);
    const running = await readRunningHandlers(env.connection, env.prefix);
    expect(running).toHaveLength(2);
    expect(mergeByName(running)).toEqual([
      {
        name: 'triage',
        attempts: 8,
        events: ['feedback.created'],
        similarWindows: [
          { atLeast: 3, withinMs: HOUR },
          { atLeast: 5, withinMs: HOUR },
        ],
      },
    ]);
    // The console reads the name's entry as before.
    expect((await readRoster(env.connection, env.prefix)).map(({ name }) => name)).toEqual([
      'triage',
    ]);
  });
});

describe("a run started again after its group's first was taken out", () => {
  it('PATCHes the first as it is now, not the record the operator took out', async () => {
    const worker = await env.startWorker({
      api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
      handlers: [incidentTriage(3)],
      similar,
      concurrency: 1,
    });
    const app = createTestAdminApp(env, worker.runQueues, TOKEN, { similar: true });
    const post = (path: string) =>
      request(app)
        .post(path)
        .set('Authorization', `Bearer ${TOKEN}`)
        .set('Sec-Fetch-Site', 'same-origin')
        .expect(200);
    for (let n = 0; n < 3; n += 1) await env.deliver(checkoutReport(n));
    await env.completedRuns(3);
    expect(patches()).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_0', body: { priority_id: 1 } },
    ]);

    await post('/admin/api/deliveries/feedback.created:fb_pay_0/detach');
    const { body } = await post(
      `/admin/api/deliveries/feedback.created:fb_pay_2/runs/${TRIAGE_HANDLER_NAME}/run-again`,
    );
    expect(body.status).toBe('queued');
    await vi.waitFor(() => expect(api.requests).toHaveLength(2), { timeout: 10_000 });
    expect(patches()[1]).toEqual({
      method: 'PATCH',
      path: '/v1/feedback/fb_pay_1',
      body: { priority_id: 1 },
    });
  });
});

describe("a run held in its queue while its group's first is taken out", () => {
  /**
   * Reports 0 to count-1 routed, their triage runs held in the paused queue; report `taken` (the
   * group's first unless told) taken out; the queue resumed. What the held runs PATCH.
   */
  async function heldWhileDetached(atLeast: number, count: number, taken = 0) {
    const worker = await env.startWorker({
      api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
      handlers: [incidentTriage(atLeast)],
      similar,
      concurrency: 1,
    });
    const triageRuns = worker.runQueues.of(TRIAGE_HANDLER_NAME);
    await triageRuns.pause();
    for (let n = 0; n < count; n += 1) await env.deliver(checkoutReport(n));
    await vi.waitFor(async () => expect(await triageRuns.getWaitingCount()).toBe(count), {
      timeout: 10_000,
      interval: 20,
    });
    expect(await consoleGroups().detach(`feedback.created:fb_pay_${taken}`)).toBe('detached');
    await triageRuns.resume();
    await env.completedRuns(count);
    return patches();
  }

  it('PATCHes the first as it is now, not the record the operator took out', async () => {
    expect(await heldWhileDetached(3, 3)).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_1', body: { priority_id: 1 } },
    ]);
  });

  it('PATCHes its own record when the group has no other member left: it is the first', async () => {
    expect(await heldWhileDetached(2, 2)).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_1', body: { priority_id: 1 } },
    ]);
  });

  it('PATCHes nothing for the delivery that crossed, once it is taken out itself', async () => {
    // Seen as the operator left it: a group of its own, nothing crossed.
    expect(await heldWhileDetached(3, 3, 2)).toEqual([]);
  });
});

describe("detaching a group's first delivery", () => {
  it('makes its earliest member left the first, for the API, later members and a rule', async () => {
    const seen = new Map<string, SimilarFacts | undefined>();
    const worker = await env.startWorker({
      api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
      handlers: [
        incidentTriage(4),
        defineHandler({
          name: 'watch',
          handle: ({ record, similar }) => void seen.set(record.id, similar),
        }),
      ],
      similar,
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
    expect(patches()).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_pay_1', body: { priority_id: 1 } },
    ]);
    // A run again of a member sees the first as it is now too.
    expect((await consoleGroups().asRouted('feedback.created:fb_pay_2'))?.group.first).toEqual(
      first(1),
    );
  });
});
