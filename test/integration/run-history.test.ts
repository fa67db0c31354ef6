/**
 * What the console shows of each run, from what the worker records where it already writes:
 * every attempt with its start, duration, outcome and error (from the run's job: its logs, and its
 * completion), and auto-triage's PATCH with the API's answer. A real worker
 * over a real Redis; the feedback API is a local HTTP server.
 */
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
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

const TOKEN = 'history-token-7e1a4c';
let env: TestWorkerEnv;
let api: FakeFeedbackApi;
let app: Express;

beforeAll(async () => {
  env = await createTestWorkerEnv();
  api = await startFakeFeedbackApi();
  // The API takes the priority but leaves the status as it was: the answer says so.
  api.respondWith((req) =>
    req.method === 'PATCH'
      ? { status: 200, body: { id: 'fb_h1', priority_id: 4, status_id: 1 } }
      : undefined,
  );
  const rules = parseTriageRules(
    JSON.stringify({
      rules: [
        {
          name: 'unhappy',
          when: { field: 'rating', lte: 2 },
          set: { priority_id: 4, status_id: 2 },
        },
      ],
    }),
    'test',
  );
  let flakes = 0;
  const worker = await env.startWorker({
    api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
    handlers: [
      createTriageHandler({ rules }),
      defineHandler({
        name: 'flaky',
        attempts: 3,
        backoff: { type: 'fixed', delayMs: 10, jitter: 0 },
        handle: () => {
          flakes += 1;
          if (flakes <= 2) throw new Error(`flake ${flakes}`);
          return { ok: true };
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_h1', title: 'Slow page', rating: 1, status_id: 1 });
  await env.completedRuns(2);
  app = createTestAdminApp(env, worker.runQueues, TOKEN);
}, 30_000);

afterAll(async () => {
  await env?.close();
  await api?.close();
});

const delivery = async () =>
  (
    await request(app)
      .get(`/admin/api/deliveries/${encodeURIComponent('feedback.created:fb_h1')}`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200)
  ).body as { runs: { handler: string; history: Record<string, unknown>[]; result: unknown }[] };

describe("a run's attempts", () => {
  it('are each recorded with start, duration, outcome and error', async () => {
    const run = (await delivery()).runs.find((each) => each.handler === 'flaky')!;
    expect(run.history).toEqual([
      expect.objectContaining({ attempt: 1, of: 3, outcome: 'retrying', error: 'flake 1' }),
      expect.objectContaining({ attempt: 2, of: 3, outcome: 'retrying', error: 'flake 2' }),
      expect.objectContaining({ attempt: 3, of: 3, outcome: 'completed' }),
    ]);
    expect(run.history[2]).not.toHaveProperty('error');
    expect(run).toMatchObject({ attempts: 3 });
    const starts = run.history.map((attempt) => Date.parse(attempt.startedAt as string));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    for (const attempt of run.history) expect(attempt.ms).toEqual(expect.any(Number));
  });

  it('show on the delivery page, in the timeline', async () => {
    const page = await request(app)
      .get(`/admin/deliveries/${encodeURIComponent('feedback.created:fb_h1')}`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200);
    const text = page.text.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
    expect(text).toMatch(
      /flaky: attempt 1 of 3, failed; retried after a backoff after \d+ ms: flake 1/,
    );
    expect(text).toMatch(
      /flaky: attempt 2 of 3, failed; retried after a backoff after \d+ ms: flake 2/,
    );
    expect(text).toMatch(/flaky: attempt 3 of 3, completed after \d+ ms/);
    expect(text).toMatch(/auto-triage: attempt 1 of 8, completed after \d+ ms/);
  });
});

describe("auto-triage's record", () => {
  it('keeps the rule that fired, the PATCH sent, and the API answer to it', async () => {
    const run = (await delivery()).runs.find((each) => each.handler === 'auto-triage')!;
    expect(run.result).toEqual({
      matched: ['unhappy'],
      patch: { priority_id: 4, status_id: 2 },
      sent: true,
      answer: { priority_id: 4, status_id: 1 },
    });
    await vi.waitFor(() =>
      expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(1),
    );
    const page = await request(app)
      .get(`/admin/deliveries/${encodeURIComponent('feedback.created:fb_h1')}`)
      .set('Authorization', `Bearer ${TOKEN}`)
      .expect(200);
    expect(page.text).toContain('The API answered with');
    const answer =
      /The API answered with <code><bdi>(.*?)<\/bdi><\/code>/.exec(page.text)?.[1] ?? '';
    expect(JSON.parse(answer.replaceAll('&quot;', '"'))).toEqual({ priority_id: 4, status_id: 1 });
  });
});
