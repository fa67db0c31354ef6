/**
 * A handler's `timeoutMs`: an attempt that does not settle in time has its signal fired, fails
 * with the timeout as its reason, is retried with the handler's backoff and ends in the dead
 * letter; the worker's slot is freed whether the handler stops or not. A real worker over a real
 * Redis; small timeouts, and every wait is on an outcome.
 */
import type { Express } from 'express';
import request from 'supertest';
import { afterEach, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'attempt-timeout-token-93c2';
const fast = { type: 'fixed', delayMs: 10, jitter: 0 } as const;
const IGNORED =
  'handler ignored its signal at the timeout and may still be running; the worker no longer waits for it';

let env: TestWorkerEnv | undefined;
/** Settled when the test ends: what a handler that never settles by itself waits on. */
let release: () => void = () => undefined;
afterEach(async () => {
  release();
  await env?.close();
  env = undefined;
});

function never(): Promise<void> {
  return new Promise((resolve) => {
    const before = release;
    release = () => {
      before();
      resolve();
    };
  });
}

interface RunView {
  handler: string;
  state: string;
  history: { attempt: number; outcome: string; error?: string }[];
}

async function runOf(app: Express, key: string, handler: string): Promise<RunView | undefined> {
  const { body } = await request(app)
    .get(`/admin/api/deliveries/${encodeURIComponent(key)}`)
    .set('Authorization', `Bearer ${TOKEN}`)
    .expect(200);
  return (body as { runs: RunView[] }).runs.find((run) => run.handler === handler);
}

it('retries a handler that never settles, then puts it in the dead letter with the timeout reason', async () => {
  env = await createTestWorkerEnv();
  let calls = 0;
  const worker = await env.startWorker({
    concurrency: 1,
    handlers: [
      defineHandler({
        name: 'hang',
        timeoutMs: 50,
        attempts: 2,
        backoff: fast,
        // Ignores its signal: only the worker's timeout frees the slot.
        handle: () => {
          calls += 1;
          return never();
        },
      }),
    ],
  });
  const delivery = await env.deliver({ id: 'fb_hang' });
  await env.failedRuns(1);

  const reason = 'handler "hang" timed out after 50 ms';
  expect(calls).toBe(2);
  const [failed] = await worker.runQueues.of('hang').getFailed();
  expect(failed?.failedReason).toBe(reason);
  expect(env.logs).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ attempt: 1, outcome: 'retrying', error: reason }),
      expect.objectContaining({ attempt: 2, outcome: 'failed', error: reason }),
      expect.objectContaining({ attempt: 1, timeoutMs: 50, msg: IGNORED }),
      expect.objectContaining({ attempt: 2, timeoutMs: 50, msg: IGNORED }),
    ]),
  );
  // The console shows each attempt, and the history the run failed, with the reason.
  const app = createTestAdminApp(env, worker.runQueues, TOKEN);
  const run = await runOf(app, delivery.key, 'hang');
  expect(run?.state).toBe('failed');
  expect(run?.history).toEqual([
    expect.objectContaining({ attempt: 1, outcome: 'retrying', error: reason }),
    expect.objectContaining({ attempt: 2, outcome: 'failed', error: reason }),
  ]);
  await env.historyHolds(1);
  const { body } = await request(app)
    .get('/admin/api/deliveries?state=failed')
    .set('Authorization', `Bearer ${TOKEN}`)
    .expect(200);
  expect(body.deliveries).toEqual([
    expect.objectContaining({
      key: delivery.key,
      runs: [expect.objectContaining({ handler: 'hang', state: 'failed', reason })],
    }),
  ]);
});

it('fires the signal of a handler that honours it with a TimeoutError naming the handler and the ms', async () => {
  env = await createTestWorkerEnv();
  const reasons: { name: string; message: string }[] = [];
  let attempts = 0;
  const worker = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'polite',
        timeoutMs: 50,
        attempts: 2,
        backoff: fast,
        handle: async ({ signal, attempt }) => {
          attempts += 1;
          if (attempt > 1) return 'done';
          await new Promise((_, reject) =>
            signal.addEventListener('abort', () => {
              reasons.push(signal.reason as DOMException);
              // Its own error: the attempt's reason is the timeout all the same.
              reject(new Error('stopped by my signal'));
            }),
          );
          return 'not reached';
        },
      }),
    ],
  });
  const delivery = await env.deliver({ id: 'fb_polite' });
  await env.completedRuns(1);

  expect(attempts).toBe(2);
  expect(reasons).toEqual([
    expect.objectContaining({
      name: 'TimeoutError',
      message: 'handler "polite" timed out after 50 ms',
    }),
  ]);
  const app = createTestAdminApp(env, worker.runQueues, TOKEN);
  expect((await runOf(app, delivery.key, 'polite'))?.history).toEqual([
    expect.objectContaining({
      attempt: 1,
      outcome: 'retrying',
      error: 'handler "polite" timed out after 50 ms',
    }),
    expect.objectContaining({ attempt: 2, outcome: 'completed' }),
  ]);
  expect(env.logs, 'it stopped at its signal').not.toContainEqual(
    expect.objectContaining({ msg: IGNORED }),
  );
});

it('leaves an attempt that shutdown aborted first interrupted at its timeout, not failed', async () => {
  env = await createTestWorkerEnv();
  let started = 0;
  let lastAttempt = 0;
  const handler = (stubborn: boolean) =>
    defineHandler({
      name: 'stubborn',
      // Far longer than the shutdown's wait below, far shorter than its abandoning.
      timeoutMs: 2_000,
      attempts: 1,
      handle: ({ attempt }) => {
        started += 1;
        lastAttempt = attempt;
        return stubborn ? never() : undefined;
      },
    });
  const first = await env.startWorker({ handlers: [handler(true)] });
  await env.deliver({ id: 'fb_stubborn_at_shutdown' });
  await vi.waitFor(() => expect(started, 'the attempt started').toBe(1), { timeout: 5_000 });
  // Its signal fires at 50 ms; it ignores it; at its timeout the worker lets it go, interrupted.
  await first.close(50);
  expect(env.logs).toContainEqual(expect.objectContaining({ outcome: 'interrupted' }));
  expect(env.logs).not.toContainEqual(
    expect.objectContaining({
      msg: 'workers still not closed after their handlers were aborted (a handler ignores its signal, or Redis is away): abandoning them; a job still running runs again elsewhere once its lock expires',
    }),
  );

  // Back to waiting with no attempt spent: another worker's attempt is its first.
  await env.startWorker({ handlers: [handler(false)] });
  await env.completedRuns(1);
  expect(lastAttempt).toBe(1);
  expect(env.logs).not.toContainEqual(expect.objectContaining({ outcome: 'retrying' }));
});
