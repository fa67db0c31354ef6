import { UnrecoverableError } from 'bullmq';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { runJobId, type RoutingResult } from '../../src/runs/run-queues.js';
import { createRunReader } from '../../src/runs/run-reader.js';
import { defineHandler, type HandlerContext } from '../../src/worker/handler.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import { createTriageHandler } from '../../src/worker/triage/triage-handler.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

let env: TestWorkerEnv;
let api: FakeFeedbackApi;

beforeAll(async () => {
  api = await startFakeFeedbackApi();
});
afterAll(async () => {
  await api.close();
});
beforeEach(async () => {
  env = await createTestWorkerEnv();
  api.respondWith(undefined);
  api.requests.length = 0;
});
afterEach(async () => {
  await env.close();
});

const fast = { delayMs: 10, jitter: 0 };
const apiClient = () => createApiClient({ baseUrl: api.url, token: API_TOKEN });

describe('the worker runtime', () => {
  it('routes each delivery to the handlers of its event whose where holds', async () => {
    const seen: string[] = [];
    const record =
      (name: string) =>
      async ({ record }: HandlerContext) => {
        seen.push(`${name}:${record.id}`);
      };
    await env.startWorker({
      handlers: [
        defineHandler({ name: 'all', handle: record('all') }),
        defineHandler({ name: 'low', where: (r) => (r.rating ?? 5) <= 2, handle: record('low') }),
        defineHandler({ name: 'deleted', events: ['feedback.deleted'], handle: record('deleted') }),
      ],
    });
    await env.deliver({ id: 'fb_low', rating: 1 });
    await env.deliver({ id: 'fb_high', rating: 5 });
    await env.completedRuns(3);
    expect(seen.sort()).toEqual(['all:fb_high', 'all:fb_low', 'low:fb_low']);
  });

  it('gives a handler the record, the delivery, a logger with the key, and the attempt', async () => {
    let context: HandlerContext | undefined;
    await env.startWorker({
      handlers: [defineHandler({ name: 'look', handle: (ctx) => void (context = ctx) })],
    });
    const delivery = await env.deliver({ id: 'fb_ctx', title: 'Hello' });
    await env.completedRuns(1);
    expect(context).toMatchObject({
      record: { id: 'fb_ctx', title: 'Hello' },
      delivery: { key: delivery.key, event: 'feedback.created', receivedAt: delivery.receivedAt },
      attempt: 1,
    });
    expect(context?.signal.aborted).toBe(false);
    expect(env.logs).toContainEqual(
      expect.objectContaining({ msg: 'handler run', handler: 'look', deliveryKey: delivery.key }),
    );
  });

  it('retries a failing handler on its own, and never re-runs one that succeeded', async () => {
    let steady = 0;
    let flaky = 0;
    await env.startWorker({
      handlers: [
        defineHandler({ name: 'steady', handle: () => void (steady += 1) }),
        defineHandler({
          name: 'flaky',
          attempts: 3,
          backoff: fast,
          handle: () => {
            flaky += 1;
            if (flaky < 3) throw new Error(`flake ${flaky}`);
          },
        }),
      ],
    });
    await env.deliver({ id: 'fb_1' });
    await env.completedRuns(2);
    expect({ steady, flaky }).toEqual({ steady: 1, flaky: 3 });
  });

  it('completes at once a run whose handler returned what JSON cannot hold, its delivery done in the history', async () => {
    let runs = 0;
    await env.startWorker({
      handlers: [
        defineHandler({
          name: 'circular',
          handle: () => {
            runs += 1;
            const response: Record<string, unknown> = { status: 200 };
            response.request = { response };
            return response;
          },
        }),
      ],
    });
    await env.deliver({ id: 'fb_circular' });
    await env.completedRuns(1);
    await env.historyHolds(1);
    expect(runs).toBe(1);
    expect(env.logs).toContainEqual(
      expect.objectContaining({
        msg: "handler's result cannot be kept as JSON; kept as null",
        handler: 'circular',
        attempt: 1,
      }),
    );
  });

  it("routes without running a handler, and makes every attempt as the run's own job", async () => {
    const attempts: Record<string, number[]> = { steady: [], flaky: [] };
    const runtime = await env.startWorker({
      handlers: [
        defineHandler({
          name: 'steady',
          handle: ({ attempt }) => {
            attempts.steady!.push(attempt);
            return { said: 'hello' };
          },
        }),
        defineHandler({
          name: 'flaky',
          attempts: 2,
          backoff: fast,
          handle: ({ attempt }) => {
            attempts.flaky!.push(attempt);
            if (attempt === 1) throw new Error('not yet');
            return { said: 'at last' };
          },
        }),
      ],
    });
    const { key } = await env.deliver({ id: 'fb_first' });
    await env.completedRuns(2);
    expect(attempts).toEqual({ steady: [1], flaky: [1, 2] });
    const routing = await env.producer.find(key);
    expect(routing?.returnvalue).toEqual({ handlers: ['steady', 'flaky'] });
    const reader = createRunReader(env.deliveries, runtime.runQueues);
    const steady = await reader.find(key, 'steady');
    expect(steady).toMatchObject({
      runId: runJobId(routing!.id!, 'steady'),
      state: 'completed',
      result: { said: 'hello' },
      attempts: 1,
      canRunAgain: true,
      canRetry: false,
    });
    const flaky = await reader.find(key, 'flaky');
    expect(flaky).toMatchObject({ state: 'completed', result: { said: 'at last' }, attempts: 2 });
    expect(flaky?.history.map(({ attempt, outcome }) => [attempt, outcome])).toEqual([
      [1, 'retrying'],
      [2, 'completed'],
    ]);
  });

  it('does not run a handler twice when its delivery is routed again', async () => {
    let runs = 0;
    const handlers = [defineHandler({ name: 'once', handle: () => void (runs += 1) })];
    const first = await env.startWorker({ handlers });
    await env.deliver({ id: 'fb_again' });
    await env.completedRuns(1);
    // Another worker process, which remembers nothing of the first: only Redis can tell it.
    await first.close();
    const second = await env.startWorker({ handlers });
    // The same routing job starts again, as after a crash before its completion, or a retry.
    const [routed] = await env.deliveries.getCompleted();
    const routedOn = routed!.finishedOn;
    await routed!.retry('completed');
    await vi.waitFor(
      async () => {
        const job = await env.deliveries.getJob(routed!.id!);
        expect(job?.finishedOn, 'the routing job run again').toBeGreaterThan(routedOn!);
        expect(job?.returnvalue as RoutingResult).toEqual({ handlers: ['once'] });
      },
      { timeout: 5_000 },
    );
    expect(
      await second.runQueues.of('once').getJobCounts('completed', 'waiting', 'active'),
    ).toEqual({
      completed: 1,
      waiting: 0,
      active: 0,
    });
    expect(runs).toBe(1);
  });

  it('does not retry an UnrecoverableError, and keeps it in the dead letter with the reason', async () => {
    let runs = 0;
    await env.startWorker({
      handlers: [
        defineHandler({
          name: 'hopeless',
          backoff: fast,
          handle: () => {
            runs += 1;
            throw new UnrecoverableError('this record can never be handled');
          },
        }),
      ],
    });
    const delivery = await env.deliver({ id: 'fb_bad' });
    await env.failedRuns(1);
    expect(runs).toBe(1);
    const [entry] = await env.deadLetter().list();
    const routing = await env.producer.find(delivery.key);
    expect(entry).toMatchObject({
      id: runJobId(routing!.id!, 'hopeless'),
      handler: 'hopeless',
      deliveryKey: delivery.key,
      reason: 'this record can never be handled',
      attempts: 1,
    });
  });

  it("fails at once on the API's 404, and retries its 500s", async () => {
    const calls: string[] = [];
    api.respondWith((request) => {
      calls.push(request.path);
      if (request.path.endsWith('/fb_gone'))
        return { status: 404, body: { errors: ['Not found'] } };
      if (calls.filter((path) => path.endsWith('/fb_flaky')).length < 3) return { status: 500 };
      return undefined;
    });
    await env.startWorker({
      api: apiClient(),
      handlers: [
        defineHandler({
          name: 'patch',
          backoff: fast,
          handle: ({ record, api: client, signal }) =>
            client.updateFeedback(record.id, { priority_id: 3 }, { signal }),
        }),
      ],
    });
    await env.deliver({ id: 'fb_gone' });
    await env.deliver({ id: 'fb_flaky' });
    await env.failedRuns(1);
    await env.completedRuns(1);
    expect(calls.filter((path) => path.endsWith('/fb_gone'))).toHaveLength(1);
    expect(calls.filter((path) => path.endsWith('/fb_flaky'))).toHaveLength(3);
  });

  it("waits out the API's 429 without spending an attempt", async () => {
    let answered429 = false;
    api.respondWith(() => {
      if (answered429) return undefined;
      answered429 = true;
      return {
        status: 429,
        headers: { 'Retry-After': '0' },
        body: { errors: ['Too many requests'] },
      };
    });
    await env.startWorker({
      api: apiClient(),
      handlers: [
        defineHandler({
          name: 'patch-once',
          attempts: 1, // a 429 that counted as an attempt would fail this run for good
          handle: ({ record, api: client }) => client.updateFeedback(record.id, { status_id: 2 }),
        }),
      ],
    });
    await env.deliver({ id: 'fb_limited' });
    await env.completedRuns(1);
    expect(api.requests.map((request) => request.method)).toEqual(['PATCH', 'PATCH']);
    expect(env.logs).toContainEqual(
      expect.objectContaining({ outcome: 'delayed', error: expect.stringMatching(/429/) }),
    );
  });

  it('lists the dead letter and retries a run from it', async () => {
    let broken = true;
    await env.startWorker({
      handlers: [
        defineHandler({
          name: 'fixable',
          attempts: 1,
          handle: () => {
            if (broken) throw new Error('downstream is down');
          },
        }),
      ],
    });
    await env.deliver({ id: 'fb_dead_1' });
    await env.deliver({ id: 'fb_dead_2' });
    await env.failedRuns(2);
    const deadLetter = env.deadLetter();
    expect(await deadLetter.count()).toBe(2);
    const entries = await deadLetter.list();
    expect(entries.map((entry) => entry.reason)).toEqual([
      'downstream is down',
      'downstream is down',
    ]);

    broken = false;
    expect(await deadLetter.retry(entries[0]!.id)).toBe(true);
    await env.completedRuns(1);
    expect(await deadLetter.retry('no-such-run')).toBe(false);
    expect(await deadLetter.retryAll()).toBe(1);
    await env.completedRuns(2);
    expect(await deadLetter.count()).toBe(0);
  });

  it('fails a run whose where() threw, so the delivery is not lost silently', async () => {
    await env.startWorker({
      handlers: [
        defineHandler({
          name: 'picky',
          where: () => {
            throw new Error('where is broken');
          },
          handle: () => undefined,
        }),
      ],
    });
    await env.deliver({ id: 'fb_where' });
    await env.failedRuns(1);
    const [entry] = await env.deadLetter().list();
    expect(entry?.reason).toBe('where() threw: where is broken');
  });

  it('evaluates where() again when a run it failed is retried from the dead letter', async () => {
    let whereBroken = true;
    let handled = 0;
    await env.startWorker({
      handlers: [
        defineHandler({
          name: 'picky',
          where: () => {
            if (whereBroken) throw new Error('where is broken');
            return true;
          },
          handle: () => void (handled += 1),
        }),
      ],
    });
    await env.deliver({ id: 'fb_where_fixed' });
    await env.failedRuns(1);
    const deadLetter = env.deadLetter();
    const [entry] = await deadLetter.list();

    whereBroken = false;
    expect(await deadLetter.retry(entry!.id)).toBe(true);
    await env.completedRuns(1);
    expect(handled).toBe(1);
  });

  it.each([
    ['failed for good on its first attempt', 'first'],
    ['used up its attempts', 'every'],
  ])(
    'gives a run that %s all of its attempts again when retried from the dead letter',
    async (_, failing) => {
      const attempts: number[] = [];
      let phase = 1;
      await env.startWorker({
        handlers: [
          defineHandler({
            name: 'counted',
            attempts: 3,
            backoff: fast,
            handle: ({ attempt }) => {
              attempts.push(attempt);
              if (failing === 'first' && phase === 1) throw new UnrecoverableError('not now');
              throw new Error(`attempt ${attempt} failed`);
            },
          }),
        ],
      });
      await env.deliver({ id: `fb_full_${failing}` });
      await env.failedRuns(1);
      expect(attempts).toEqual(failing === 'first' ? [1] : [1, 2, 3]);

      phase = 2;
      attempts.length = 0;
      const deadLetter = env.deadLetter();
      const [entry] = await deadLetter.list();
      await deadLetter.retry(entry!.id);
      await vi.waitFor(() => expect(attempts).toHaveLength(3), { timeout: 10_000 });
      await env.failedRuns(1);
      expect(attempts).toEqual([1, 2, 3]);
    },
  );

  it.each([
    ['{}', {}],
    ['a key alone', { key: 'k1' }],
    [
      'a null record',
      { key: 'k2', event: 'feedback.created', receivedAt: new Date().toISOString(), record: null },
    ],
  ])(
    'fails a deliveries job whose data is %s into the dead letter, and runs no handler',
    async (_, data) => {
      let handled = 0;
      await env.startWorker({
        handlers: [defineHandler({ name: 'never', handle: () => void (handled += 1) })],
      });
      const job = await env.deliveries.add('feedback.created', data as never);
      await vi.waitFor(async () => expect(await job.getState(), 'the job to fail').toBe('failed'), {
        timeout: 5_000,
      });
      const deadLetter = env.deadLetter();
      const [entry] = await deadLetter.list();
      expect(entry).toMatchObject({ id: job.id, handler: 'routing' });
      expect(entry!.reason).toMatch(/^not a delivery: /);
      expect(entry!.reason).toMatch(data === null || !('record' in data) ? /key|record/ : /record/);
      expect(handled).toBe(0);
    },
  );

  it('fails a run job whose delivery is not one, without running its handler', async () => {
    let handled = 0;
    const runtime = await env.startWorker({
      handlers: [defineHandler({ name: 'never', handle: () => void (handled += 1) })],
    });
    const job = await runtime.runQueues
      .of('never')
      .add('never', { delivery: { key: 'k3' } } as never);
    await env.failedRuns(1);
    const [entry] = await env.deadLetter().list();
    expect(entry).toMatchObject({ id: job.id, handler: 'never', deliveryKey: 'k3' });
    expect(entry!.reason).toMatch(/^not a delivery: .*record/);
    expect(handled).toBe(0);
  });

  it('on shutdown, aborts a run that does not finish in time and puts it back for another worker', async () => {
    let started = 0;
    let secondRun = false;
    const slow = defineHandler({
      name: 'slow',
      attempts: 1,
      handle: async ({ signal }) => {
        started += 1;
        if (started > 1) {
          secondRun = true;
          return;
        }
        await new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason)),
        );
      },
    });
    const first = await env.startWorker({ handlers: [slow] });
    await env.deliver({ id: 'fb_slow' });
    await vi.waitFor(() => expect(started, 'runs started').toBe(1), {
      timeout: 5_000,
    });
    await first.close(100);
    expect(env.logs).toContainEqual(expect.objectContaining({ outcome: 'interrupted' }));

    await env.startWorker({ handlers: [slow] });
    await env.completedRuns(1);
    expect(secondRun).toBe(true);
  });

  it('auto-triage sends one PATCH per record, and none when nothing would change', async () => {
    const rules = parseTriageRules(
      JSON.stringify({
        rules: [{ name: 'low', when: { field: 'rating', lte: 2 }, set: { priority_id: 3 } }],
      }),
      'test',
    );
    await env.startWorker({ api: apiClient(), handlers: [createTriageHandler({ rules })] });
    await env.deliver({ id: 'fb_needs_it', rating: 1, priority_id: 1 });
    await env.deliver({ id: 'fb_has_it', rating: 1, priority_id: 3 });
    await env.deliver({ id: 'fb_no_rule', rating: 5 });
    await env.completedRuns(3);
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_needs_it', body: { priority_id: 3 } },
    ]);
  });
  it('stops what it started when its start fails partway, leaving no worker taking jobs', async () => {
    // A key of the wrong type where the handler queue's meta belongs: reading its global rate
    // limit, the last step of the start, fails after every BullMQ worker is up.
    await env.connection.set(`${env.prefix}:runs-broken:meta`, 'not a hash');
    await expect(
      env.startWorker({ handlers: [defineHandler({ name: 'broken', handle: () => undefined })] }),
    ).rejects.toThrow(/WRONGTYPE/);
    await vi.waitFor(async () => expect(await env.deliveries.getWorkersCount()).toBe(0), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it('leaves no listener on its connection when its first announcement fails', async () => {
    // A key of the wrong type where the running workers' roster belongs: the announcement, made
    // before any BullMQ worker starts, fails.
    await env.connection.set(`${env.prefix}:handler-roster:workers`, 'not a hash');
    const start = () =>
      env.startWorker({ handlers: [defineHandler({ name: 'early', handle: () => undefined })] });
    await expect(start()).rejects.toThrow(/WRONGTYPE/);
    await env.connection.del(`${env.prefix}:handler-roster:workers`);
    await (await start()).close();
    // Each connection as a runtime that started and closed leaves its own.
    const [failed, closed] = env.workerConnections.map((connection) =>
      ['ready', 'close'].map((event) => connection.listenerCount(event)),
    );
    expect(failed).toEqual(closed);
  });
});
