/**
 * A rolling deploy that changes a handler's events, on real workers and Redis: two workers with a
 * handler of the same name and other events. A delivery of an event only one of them lists gets
 * its run whichever routes it, and the run is made by the one whose handler lists the event; once
 * no running worker's handler lists it, a run of it is skipped.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { addRuns, runJobId } from '../../src/runs/run-queues.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

let env: TestWorkerEnv;
beforeEach(async () => {
  env = await createTestWorkerEnv();
});
afterEach(() => env.close());

const eventually = <T>(check: () => T | Promise<T>) =>
  vi.waitFor(check, { timeout: 10_000, interval: 20 });

/** The records each release's `tally` ran on, in the order it ran them. */
const ranBy = { older: [] as string[], newer: [] as string[] };
beforeEach(() => {
  ranBy.older.length = 0;
  ranBy.newer.length = 0;
});

/** `tally` as the older release has it, and as the newer one has it, taking one more event. */
const tally = (release: 'older' | 'newer') =>
  defineHandler({
    name: 'tally',
    events: release === 'older' ? ['feedback.created'] : ['feedback.created', 'feedback.updated'],
    handle: ({ record }) => {
      ranBy[release].push(record.id);
      return { ranBy: release };
    },
  });

const updated = (id: string): Delivery => ({
  key: `feedback.updated:${id}`,
  event: 'feedback.updated',
  receivedAt: new Date().toISOString(),
  record: { id },
});

const leftLines = () =>
  env.logs.filter(
    ({ msg }) => msg === 'handler run left to a worker whose handler takes its event',
  );

it("adds a run of the event only the other worker's handler lists, and that worker makes it, once", async () => {
  // The newer worker writes its handlers to the roster, then stops (it counts as running 30 s):
  // only the older one routes.
  const newer = await env.startWorker({ handlers: [tally('newer')] });
  await newer.close(1_000);
  const older = await env.startWorker({ handlers: [tally('older')], announceEveryMs: 20 });
  const { jobId } = await env.producer.enqueue(updated('fb_upd_1'));
  await eventually(async () =>
    expect((await env.deliveries.getJob(jobId))?.returnvalue).toEqual({ handlers: ['tally'] }),
  );
  // The older worker takes the run, and leaves it: it does not run its handler on it.
  await eventually(() => expect(leftLines().length).toBeGreaterThan(0));

  await env.startWorker({ handlers: [tally('newer')] });
  const run = await older.runQueues.of('tally').getJob(runJobId(jobId, 'tally'));
  await eventually(async () => expect(await run!.getState()).toBe('completed'));
  expect(ranBy).toEqual({ older: [], newer: ['fb_upd_1'] });
  const done = await older.runQueues.of('tally').getJob(run!.id!);
  expect(done?.returnvalue).toEqual({ ranBy: 'newer' });
  // Left without spending an attempt: the one it took is its only one.
  expect(done?.attemptsMade).toBe(1);
});

it('leaves a run to a worker that started since its roster was last read', async () => {
  // The older worker reads the roster at start only, in this test: before the newer one wrote it.
  const older = await env.startWorker({ handlers: [tally('older')] });
  const newer = await env.startWorker({ handlers: [tally('newer')] });
  await newer.close(1_000);
  const delivery = updated('fb_upd_2');
  await addRuns(
    older.runQueues,
    { deliveryJobId: 'routed-before', delivery },
    [{ handler: 'tally', attempts: 3 }],
    { dedupeTtlSeconds: env.dedupeTtlSeconds },
  );
  await eventually(() => expect(leftLines().length).toBeGreaterThan(0));
  const run = await older.runQueues.of('tally').getJob(runJobId('routed-before', 'tally'));
  await older.close(1_000);
  await env.startWorker({ handlers: [tally('newer')] });
  await eventually(async () => expect(await run!.getState()).toBe('completed'));
  expect(ranBy).toEqual({ older: [], newer: ['fb_upd_2'] });
});

it("skips a run of an event no running worker's handler of its name lists, without running it", async () => {
  const older = await env.startWorker({ handlers: [tally('older')] });
  await addRuns(
    older.runQueues,
    { deliveryJobId: 'routed-before', delivery: updated('fb_upd_3') },
    [{ handler: 'tally', attempts: 3 }],
    { dedupeTtlSeconds: env.dedupeTtlSeconds },
  );
  const run = await older.runQueues.of('tally').getJob(runJobId('routed-before', 'tally'));
  await eventually(async () => expect(await run!.getState()).toBe('completed'));
  const done = await older.runQueues.of('tally').getJob(run!.id!);
  expect(done?.returnvalue).toEqual({ skipped: 'its events do not include feedback.updated' });
  expect(ranBy.older).toEqual([]);
});
