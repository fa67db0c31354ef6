/**
 * The delivery console's JSON API and pages over real HTTP, against deliveries a real worker
 * handled: search, filters, paging and its bounds, one delivery with its runs, bad input, the
 * token on every route, and hostile record content rendered as text.
 */
import { UnrecoverableError } from 'bullmq';
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { findDelivery } from '../../src/queue/deliveries-queue.js';
import { createDeliveryStats } from '../../src/queue/delivery-stats.js';
import { defineHandler } from '../../src/worker/handler.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import { createTriageHandler } from '../../src/worker/triage/triage-handler.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'console-token-5d2c9e';
const bearer = `Bearer ${TOKEN}`;
const HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';

let env: TestWorkerEnv;
let app: Express;

const records: FeedbackRecord[] = [
  {
    id: 'fb_c1',
    title: 'Checkout button broken',
    rating: 1,
    reporter: { email: 'ana@example.com' },
  },
  { id: 'fb_c2', title: 'Love the new design', rating: 5, description: 'Smooth CHECKOUT flow' },
  { id: 'fb_c3', title: 'Please fail this one', rating: 2 },
  { id: 'fb_c4', title: HOSTILE, description: HOSTILE, url: 'javascript:alert(1)', rating: 3 },
];

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const rules = parseTriageRules(
    JSON.stringify({
      rules: [{ name: 'unhappy', when: { field: 'rating', lte: 2 }, set: { priority_id: 4 } }],
    }),
    'test',
  );
  const worker = await env.startWorker({
    handlers: [
      createTriageHandler({ rules, dryRun: true }),
      defineHandler({
        name: 'picky',
        handle: ({ record }) => {
          if (record.title?.includes('fail')) throw new UnrecoverableError('picky refused it');
        },
      }),
    ],
  });
  // Each routed before the next is sent, so that "newest first" has one answer: the history
  // numbers deliveries as workers route them, and a worker routes several at once.
  for (const [index, record] of records.entries()) {
    await env.deliver(record);
    await env.historyHolds(index + 1);
  }
  await env.completedRuns(7);
  await env.failedRuns(1);
  app = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(() => env?.close());

const search = (query: string) =>
  request(app).get(`/admin/api/deliveries?${query}`).set('Authorization', bearer);
const ids = (body: { deliveries: { record: { id: string } }[] }) =>
  body.deliveries.map((delivery) => delivery.record.id);

describe('GET /admin/api/deliveries', () => {
  it('lists the newest first, each with its handlers and their outcomes', async () => {
    const { body } = await search('').expect(200);
    expect(ids(body)).toEqual(['fb_c4', 'fb_c3', 'fb_c2', 'fb_c1']);
    expect(body).toMatchObject({ total: 4, searched: 4, offset: 0, limit: 25 });
    const first = body.deliveries.find((d: { key: string }) => d.key === 'feedback.created:fb_c1');
    expect(first).toMatchObject({
      state: 'done',
      runs: [
        { handler: 'auto-triage', state: 'completed', result: { matched: ['unhappy'] } },
        { handler: 'picky', state: 'completed' },
      ],
    });
  });

  it.each([
    ['a feedback id', 'q=fb_c2', ['fb_c2']],
    ['a delivery key', `q=${encodeURIComponent('feedback.created:fb_c3')}`, ['fb_c3']],
    ['words of the title or description, in any case', 'q=checkout', ['fb_c2', 'fb_c1']],
    ['a reporter email', 'q=ana%40example.com', ['fb_c1']],
    ['the state "some handler failed"', 'state=failed', ['fb_c3']],
    ['a search and a state together', 'q=checkout&state=done', ['fb_c2', 'fb_c1']],
  ])('finds deliveries by %s', async (_what, query, expected) => {
    expect(ids((await search(query).expect(200)).body)).toEqual(expected);
  });

  it('pages with offset and limit, and says how many match', async () => {
    const { body } = await search('offset=1&limit=2').expect(200);
    expect(ids(body)).toEqual(['fb_c3', 'fb_c2']);
    expect(body).toMatchObject({ total: 4, offset: 1, limit: 2 });
    expect(ids((await search('offset=4').expect(200)).body)).toEqual([]);
  });

  it.each([
    ['limit=0', /limit: expected a whole number from 1 to 100/],
    ['limit=101', /limit: expected a whole number from 1 to 100/],
    ['offset=-1', /offset: expected a whole number/],
    ['offset=1.5', /offset: expected a whole number/],
    ['offset=100001', /offset: expected a whole number from 0 to 100000/],
    ['state=lost', /state: /],
    ['q=a&q=b', /q: expected one value/],
    ['sort=title', /sort: unknown parameter/],
  ])('answers 400 to %s', async (query, detail) => {
    const response = await search(query).expect(400);
    expect(response.body).toMatchObject({ code: 'BAD_REQUEST' });
    expect(response.body.detail).toMatch(detail);
  });
});

describe('the lists that take no parameter', () => {
  // /quarantine?limit=5 answered the whole list, as if obeyed.
  it.each([
    ['/admin/api/overview?since=1h', 'since'],
    ['/admin/api/quarantine?limit=5', 'limit'],
    ['/admin/api/dead-letter?handler=triage', 'handler'],
  ])('answer 400 to %s, naming the parameter', async (path, name) => {
    const response = await request(app).get(path).set('Authorization', bearer).expect(400);
    expect(response.body).toMatchObject({ code: 'BAD_REQUEST' });
    expect(response.body.detail).toBe(`${name}: unknown parameter; this endpoint takes none`);
  });
});

describe('GET /admin/api/deliveries/{key}', () => {
  it('answers one delivery with its record and runs, and 404 for a key not kept', async () => {
    const { body } = await request(app)
      .get(`/admin/api/deliveries/${encodeURIComponent('feedback.created:fb_c3')}`)
      .set('Authorization', bearer)
      .expect(200);
    expect(body).toMatchObject({
      key: 'feedback.created:fb_c3',
      state: 'failed',
      record: { id: 'fb_c3' },
      runs: expect.arrayContaining([
        expect.objectContaining({ handler: 'picky', state: 'failed', reason: 'picky refused it' }),
      ]),
    });
    const missing = await request(app)
      .get('/admin/api/deliveries/feedback.created%3Afb_never')
      .set('Authorization', bearer)
      .expect(404);
    expect(missing.body).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('the console pages', () => {
  it('render hostile record content as text, link only http(s) URLs, and carry a strict CSP', async () => {
    for (const path of [
      '/admin/deliveries',
      `/admin/deliveries/${encodeURIComponent('feedback.created:fb_c4')}`,
    ]) {
      const response = await request(app).get(path).set('Authorization', bearer).expect(200);
      expect(response.headers['content-security-policy']).toMatch(
        /default-src 'none'; script-src 'self'/,
      );
      expect(response.text).not.toContain('<script>window.pwned');
      expect(response.text).not.toContain('<img src=x');
      expect(response.text).toContain('&lt;script&gt;window.pwned=2&lt;/script&gt;');
      expect(response.text).not.toMatch(/href="javascript:/i);
    }
  });

  it('says so when nothing matches, and 404 for a delivery not kept', async () => {
    const none = await request(app)
      .get('/admin/deliveries?q=nothing-like-this')
      .set('Authorization', bearer);
    expect(none.text).toContain('No delivery matches among the 4 kept.');
    const missing = await request(app)
      .get('/admin/deliveries/nope')
      .set('Authorization', bearer)
      .expect(404);
    expect(missing.text).toContain('No delivery <code><bdi>nope</bdi></code> is kept.');
    const entry = await request(app)
      .get('/admin/quarantine/q-nope')
      .set('Authorization', bearer)
      .expect(404);
    expect(entry.text).toContain('No quarantine entry <code><bdi>q-nope</bdi></code> is kept.');
  });
});

describe('the quarantine', () => {
  const entry = async (body: Buffer) =>
    (
      await env.quarantine.add({
        receivedAt: new Date().toISOString(),
        reason: 'unparseable',
        issues: [{ path: '', message: 'not JSON' }],
        headers: { 'content-type': 'application/json' },
        body,
      })
    ).id;
  const post = (path: string) =>
    request(app).post(path).set('Authorization', bearer).set('Sec-Fetch-Site', 'same-origin');

  it('shows a body byte for byte, escaped, with bytes that are not UTF-8 made visible', async () => {
    const body = Buffer.concat([
      Buffer.from('<script>window.pwned=1</script>'),
      Buffer.from([0xff]),
    ]);
    const id = await entry(body);
    const api = await request(app).get(`/admin/api/quarantine/${id}`).set('Authorization', bearer);
    expect(api.body).toMatchObject({
      id,
      reason: 'unparseable',
      size: body.length,
      bodyEncoding: 'base64',
    });
    expect(Buffer.from(api.body.body, 'base64').equals(body)).toBe(true);
    const listed = await request(app).get('/admin/api/quarantine').set('Authorization', bearer);
    expect(listed.body.entries.map((e: { id: string }) => e.id)).toContain(id);
    const page = await request(app)
      .get(`/admin/quarantine/${id}`)
      .set('Authorization', bearer)
      .expect(200);
    expect(page.text).toContain('&lt;script&gt;window.pwned=1&lt;/script&gt;');
    expect(page.text).toMatch(/<span class="byte"[^>]*>\\xFF<\/span>/);
    expect(page.text).not.toContain('<script>window.pwned');
  });

  it('are listed under the quarantined filter, searched by their body, and only there', async () => {
    const id = await entry(
      Buffer.from('{"id": "fb_q9", "title": "Broken UMLAUT ü", "rating": "x"}'),
    );
    const found = await search('state=quarantined&q=umlaut').expect(200);
    expect(found.body).toMatchObject({ total: 1, deliveries: [{ id, state: 'quarantined' }] });
    expect((await search('state=quarantined&q=fb_none').expect(200)).body.total).toBe(0);
    expect((await search('q=umlaut').expect(200)).body.total).toBe(0);
    const page = await request(app)
      .get('/admin/deliveries?state=quarantined&q=umlaut')
      .set('Authorization', bearer)
      .expect(200);
    expect(page.text).toContain(`href="/admin/quarantine/${id}"`);
    await env.quarantine.delete(id);
  });

  it('keeps an entry that is still invalid, replays one that passes, deletes on request', async () => {
    const bad = await entry(Buffer.from('not json'));
    expect((await post(`/admin/api/quarantine/${bad}/replay`).expect(200)).body).toMatchObject({
      status: 'invalid',
    });
    const good = await entry(
      Buffer.from(JSON.stringify({ id: 'fb_replayed', title: 'Back again' })),
    );
    expect((await post(`/admin/api/quarantine/${good}/replay`).expect(200)).body).toMatchObject({
      status: 'queued',
      key: 'feedback.created:fb_replayed',
    });
    // Listed once a worker routed it (until then, under the waiting filter).
    await vi.waitFor(async () =>
      expect(ids((await search('q=fb_replayed').expect(200)).body)).toEqual(['fb_replayed']),
    );
    await post(`/admin/api/quarantine/${good}/replay`).expect(404);
    // The page's form: back to the quarantine, saying what happened.
    const deleted = await post(`/admin/quarantine/${bad}/delete`).expect(303);
    expect(deleted.headers.location).toBe('/admin/quarantine?done=deleted');
    const after = await request(app).get(deleted.headers.location!).set('Authorization', bearer);
    expect(after.text).toContain('Deleted from the quarantine.');
    await post(`/admin/api/quarantine/${bad}/delete`).expect(404);
  });

  it('refuses a cross-site POST that carries valid basic-auth credentials', async () => {
    const id = await entry(Buffer.from('kept'));
    const basic = `Basic ${Buffer.from(`operator:${TOKEN}`).toString('base64')}`;
    for (const path of [`/admin/quarantine/${id}/delete`, `/admin/api/quarantine/${id}/delete`]) {
      const refused = await request(app)
        .post(path)
        .set('Authorization', basic)
        .set('Sec-Fetch-Site', 'cross-site')
        .expect(403);
      expect(refused.body).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
    }
    expect(await env.quarantine.get(id)).toBeDefined();
  });
});

describe('the dead letter', () => {
  const post = (path: string) =>
    request(app).post(path).set('Authorization', bearer).set('Sec-Fetch-Site', 'same-origin');

  it('groups failed runs by handler and reason, and retries a group with all its attempts', async () => {
    const { body } = await request(app).get('/admin/api/dead-letter').set('Authorization', bearer);
    expect(body).toMatchObject({
      total: 1,
      groups: [
        {
          handler: 'picky',
          reason: 'picky refused it',
          runs: [{ deliveryKey: 'feedback.created:fb_c3' }],
        },
      ],
    });
    const page = await request(app).get('/admin/dead-letter').set('Authorization', bearer);
    expect(page.text).toContain('picky · 1 run<');
    const retried = await post('/admin/api/dead-letter/retry')
      .send({ handler: 'picky', reason: 'picky refused it' })
      .expect(200);
    expect(retried.body).toEqual({ retried: 1 });
    // It runs again, and picky refuses it again: a later failure.
    const firstFailure = body.groups[0].runs[0].failedAt as string;
    await vi.waitFor(
      async () => {
        const now = await request(app).get('/admin/api/dead-letter').set('Authorization', bearer);
        expect(now.body.groups[0]?.runs[0]?.failedAt, 'the run to fail again').toBeDefined();
        expect(now.body.groups[0].runs[0].failedAt > firstFailure).toBe(true);
      },
      { timeout: 5_000 },
    );
    await post('/admin/api/dead-letter/no-such-run/retry').expect(404);
    await post('/admin/api/dead-letter/retry').send({ handler: 'picky' }).expect(400);
  });
});

describe("a delivery's page", () => {
  it('retries a failed run from the page, and comes back to say so', async () => {
    const key = encodeURIComponent('feedback.created:fb_c3');
    await vi.waitFor(
      async () => {
        const page = await request(app)
          .get(`/admin/deliveries/${key}`)
          .set('Authorization', bearer);
        expect(page.text, 'the failed run with its retry button').toContain(
          `action="/admin/deliveries/${key}/runs/picky/retry"`,
        );
      },
      { timeout: 5_000 },
    );
    const before = await request(app).get(`/admin/deliveries/${key}`).set('Authorization', bearer);
    const timeline = /<ol class="timeline">([\s\S]*?)<\/ol>/.exec(before.text)?.[1] ?? '';
    const steps = [...timeline.matchAll(/<li>([\s\S]*?)<\/li>/g)].map(([, item]) =>
      item!
        .replace(/<[^>]+>/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    );
    const what = steps.map((step) => step.replace(/^\S+ /, '')); // without the time
    expect(what.slice(0, 4)).toEqual([
      'received',
      'queued',
      'taken by a worker',
      'routed to auto-triage, picky',
    ]);
    // The runs' attempts, in an order the clock decides; picky's second after the dead
    // letter's group retry above, counted from 1 again.
    const pickyFailed = /^picky: attempt 1 of 8, failed for good after \d+ ms: picky refused it$/;
    expect(what.slice(4).sort()).toEqual([
      expect.stringMatching(/^auto-triage: attempt 1 of 8, completed after \d+ ms$/),
      expect.stringMatching(pickyFailed),
      expect.stringMatching(pickyFailed),
    ]);
    const retried = await request(app)
      .post(`/admin/deliveries/${key}/runs/picky/retry`)
      .set('Authorization', bearer)
      .set('Sec-Fetch-Site', 'same-origin')
      .expect(303);
    expect(retried.headers.location).toBe(`/admin/deliveries/${key}?done=retried`);
    const after = await request(app).get(retried.headers.location!).set('Authorization', bearer);
    expect(after.text).toContain('Queued again, with all of its attempts.');
    const gone = await request(app)
      .post(`/admin/deliveries/${key}/runs/no-such-handler/retry`)
      .set('Authorization', bearer)
      .set('Sec-Fetch-Site', 'same-origin')
      .expect(303);
    expect(gone.headers.location).toBe(`/admin/deliveries/${key}?done=gone`);
  });
});

describe('the overview', () => {
  it('shows what the receivers answered, the queues, and which secret matched', async () => {
    const stats = createDeliveryStats({
      connection: env.connection,
      prefix: env.prefix,
      logger: createLogger({ level: 'silent' }),
    });
    for (const outcome of ['queued', 'queued', 'queued', 'duplicate']) stats.count(outcome);
    stats.count('rejected', 'signature_mismatch');
    for (const index of [0, 0, 0, 1]) stats.secretMatched(index);
    await stats.close();
    const { body } = await request(app).get('/admin/api/overview').set('Authorization', bearer);
    const expected = {
      queued: 3,
      duplicate: 1,
      'rejected:signature_mismatch': 1,
      'secret:0': 3,
      'secret:1': 1,
    };
    expect(body.stats.lastHour).toEqual(expected);
    expect(body.stats.lastDay).toEqual(expected);
    expect(body.stats.perMinute).toHaveLength(60);
    // Counted in the last minute, or in the one before when the read came in the next minute.
    const lastTwo = (body.stats.perMinute as { counts: Record<string, number> }[]).slice(-2);
    const counted: Record<string, number> = {};
    for (const { counts } of lastTwo) {
      for (const [field, count] of Object.entries(counts)) {
        counted[field] = (counted[field] ?? 0) + count;
      }
    }
    expect(counted).toEqual(expected);
    expect(body.queues.map((queue: { name: string }) => queue.name)).toEqual([
      'deliveries',
      'runs-auto-triage',
      'runs-picky',
    ]);
    expect(body.deadLetter).toBe(1);
    const page = await request(app).get('/admin').set('Authorization', bearer).expect(200);
    expect(page.text).toContain('signature_mismatch 1');
    expect(page.text).toMatch(
      /<td data-label="Secret">\s*#2\s*<\/td>\s*<td data-label="Last hour">1<\/td>/,
    );
    expect(page.text).toContain('<svg');
  });
});

describe('access', () => {
  it.each([
    '/admin',
    '/admin/deliveries',
    '/admin/deliveries/feedback.created%3Afb_c1',
    '/admin/quarantine',
    '/admin/dead-letter',
    '/admin/api/overview',
    '/admin/api/deliveries',
    '/admin/api/deliveries/feedback.created%3Afb_c1',
    '/admin/api/no-such-endpoint',
    '/admin/assets/console.js',
    '/admin/queues',
    '/admin/deliveries/feedback.created%3Afb_c1/run-again',
  ])('answers 401 without the token: %s', async (path) => {
    const response = await request(app).get(path).expect(401);
    expect(response.body).toMatchObject({ code: 'ADMIN_UNAUTHORIZED' });
    await request(app).get(path).set('Authorization', 'Bearer wrong-token-000000').expect(401);
  });

  it.each([
    '/admin/deliveries/feedback.created%3Afb_c1/run-again',
    '/admin/deliveries/feedback.created%3Afb_c3/runs/picky/retry',
    '/admin/api/deliveries/feedback.created%3Afb_c1/run-again',
    '/admin/api/deliveries/feedback.created%3Afb_c1/runs/picky/run-again',
    '/admin/api/dead-letter/retry',
    '/admin/api/quarantine/q-1/replay',
  ])('answers a POST without the token 401: %s', async (path) => {
    const response = await request(app)
      .post(path)
      .set('Sec-Fetch-Site', 'same-origin')
      .type('form')
      .send({ confirm: 'yes' })
      .expect(401);
    expect(response.body).toMatchObject({ code: 'ADMIN_UNAUTHORIZED' });
  });
});

describe('a method an endpoint does not take', () => {
  it.each([
    ['get', '/admin/api/deliveries/feedback.created%3Afb_c1/detach', 'POST'],
    ['post', '/admin/api/groups', 'GET'],
    ['delete', '/admin/api/deliveries/feedback.created%3Afb_c1', 'GET'],
    ['put', '/admin/api/dead-letter/retry', 'POST'],
    // Paths a later endpoint's parameter also matches (/deliveries/:key, /deliveries/bulk/:id).
    ['get', '/admin/api/deliveries/bulk', 'POST'],
    ['get', '/admin/api/deliveries/bulk/plan', 'POST'],
  ] as const)('answers %s %s 405, with Allow: %s', async (method, path, allowed) => {
    const response = await request(app)[method](path).set('Authorization', bearer).expect(405);
    expect(response.headers.allow).toBe(allowed);
    expect(response.body).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  });

  it.each([
    ['post', '/admin/deliveries', 'GET'],
    ['post', '/admin/groups', 'GET'],
    ['delete', '/admin/deliveries/feedback.created%3Afb_c1', 'GET'],
    ['get', '/admin/deliveries/feedback.created%3Afb_c1/detach', 'POST'],
    ['put', '/admin/deliveries/bulk', 'GET, POST'],
    ['post', '/admin/assets/console.css', 'GET'],
  ] as const)('answers %s on the page %s 405, with Allow: %s', async (method, path, allowed) => {
    const sent = request(app)[method](path);
    const response = await sent
      .set('Authorization', bearer)
      .set('Sec-Fetch-Site', 'same-origin')
      .expect(405);
    expect(response.headers.allow).toBe(allowed);
    expect(response.body).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  });

  it('answers 404 for a path no endpoint has, whatever the method', async () => {
    const agent = request(app);
    for (const send of [agent.get, agent.post]) {
      const response = await send
        .call(agent, '/admin/api/no-such-endpoint')
        .set('Authorization', bearer)
        .expect(404);
      expect(response.body).toMatchObject({ code: 'NOT_FOUND' });
    }
  });
});

describe('a delivery whose job is no longer kept', () => {
  it('is still listed and found, and its page shows what the history keeps', async () => {
    const key = 'feedback.created:fb_c2';
    const job = await findDelivery(env.deliveries, key);
    await job!.remove();
    expect(ids((await search('q=smooth').expect(200)).body)).toEqual(['fb_c2']);
    const { body } = await request(app)
      .get(`/admin/api/deliveries/${encodeURIComponent(key)}`)
      .set('Authorization', bearer)
      .expect(200);
    expect(body).toMatchObject({
      key,
      recordKept: false,
      state: 'done',
      record: { id: 'fb_c2', title: 'Love the new design', rating: 5 },
      runs: [
        { handler: 'auto-triage', state: 'completed' },
        { handler: 'picky', state: 'completed' },
      ],
    });
    // The history keeps no description: the whole record went with its job.
    expect(body.record).not.toHaveProperty('description');
    const page = await request(app)
      .get(`/admin/deliveries/${encodeURIComponent(key)}`)
      .set('Authorization', bearer)
      .expect(200);
    expect(page.text).toContain('The whole record is no longer kept');
  });
});
