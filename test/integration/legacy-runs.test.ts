/**
 * Upgrading a deployment whose runs wait in the one `handler-runs` queue of earlier versions:
 * they move to their handlers' queues, where workers of this version take them.
 */
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { afterEach, expect, inject, it } from 'vitest';
import { LEGACY_RUNS_QUEUE, moveLegacyRuns } from '../../src/runs/legacy-runs.js';
import {
  createRunQueues,
  handlerRunRetention,
  type HandlerRunData,
} from '../../src/runs/run-queues.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

function run(id: string): HandlerRunData {
  return {
    delivery: {
      key: `feedback.created:${id}`,
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
      record: { id },
    },
  };
}

/** The old queue as an earlier version left it: runs waiting, delayed and failed. */
async function legacyQueue(env: TestWorkerEnv): Promise<Queue<HandlerRunData>> {
  const legacy = new Queue<HandlerRunData>(LEGACY_RUNS_QUEUE, {
    connection: { url: inject('redisUrl') },
    prefix: env.prefix,
  });
  cleanup.push(() => legacy.close());
  // A run that an earlier version's worker failed for good.
  await legacy.add('notify', run('fb_failed'), { jobId: 'd3.notify', attempts: 1 });
  const old = new Worker(
    LEGACY_RUNS_QUEUE,
    async () => {
      throw new UnrecoverableError('the old version failed it');
    },
    { connection: { url: inject('redisUrl'), maxRetriesPerRequest: null }, prefix: env.prefix },
  );
  await new Promise<void>((resolve) => old.on('failed', () => resolve()));
  await old.close();
  // Runs still to make when that version's workers stopped.
  await legacy.add('notify', run('fb_waiting'), { jobId: 'd1.notify', attempts: 3 });
  await legacy.add('triage', run('fb_delayed'), { jobId: 'd2.triage', delay: 60_000 });
  return legacy;
}

it("moves the runs left waiting or delayed in the old queue to their handlers' queues", async () => {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  const legacy = await legacyQueue(env);
  expect(await legacy.getJobCounts('waiting', 'delayed', 'failed')).toEqual({
    waiting: 1,
    delayed: 1,
    failed: 1,
  });
  const runQueues = createRunQueues(env.connection, env.prefix);
  cleanup.push(() => runQueues.close());
  const options = {
    connection: env.connection,
    prefix: env.prefix,
    runQueues,
    dedupeTtlSeconds: 3600,
    // COMPLETED_JOB_RETENTION_SECONDS=60, as `runs upgrade` reads it.
    retention: handlerRunRetention(60),
  };

  expect(await moveLegacyRuns(options)).toEqual({ moved: 2, failedLeft: 1, activeLeft: 0 });
  expect(await legacy.getJobCounts('waiting', 'delayed', 'failed')).toEqual({
    waiting: 0,
    delayed: 0,
    failed: 1,
  });
  const delayed = await runQueues.of('triage').getJob('d2.triage');
  expect(await delayed?.getState(), 'still waiting out its delay').toBe('delayed');
  expect(delayed?.opts.removeOnComplete, 'kept as a worker keeps a run').toEqual(
    handlerRunRetention(60).removeOnComplete,
  );
  // Again: nothing more to move.
  expect(await moveLegacyRuns(options)).toEqual({ moved: 0, failedLeft: 1, activeLeft: 0 });

  // A worker of this version takes the moved run.
  const done: string[] = [];
  await env.startWorker({
    handlers: [
      defineHandler({ name: 'notify', handle: ({ record }) => void done.push(record.id) }),
    ],
  });
  await env.completedRuns(1);
  expect(done).toEqual(['fb_waiting']);

  // Asked, the failed ones move too, and run again.
  expect(await moveLegacyRuns({ ...options, includeFailed: true })).toEqual({
    moved: 1,
    failedLeft: 0,
    activeLeft: 0,
  });
  await env.completedRuns(2);
  expect(done.sort()).toEqual(['fb_failed', 'fb_waiting']);
});

it('keeps a run backing off after a failed attempt delayed until its backoff ends', async () => {
  const env = await createTestWorkerEnv();
  cleanup.push(() => env.close());
  const legacy = new Queue<HandlerRunData>(LEGACY_RUNS_QUEUE, {
    connection: { url: inject('redisUrl') },
    prefix: env.prefix,
  });
  cleanup.push(() => legacy.close());
  const hour = 3_600_000;
  // Created two hours ago, it failed its first attempt just now: it waits an hour from now.
  await legacy.add('triage', run('fb_backoff'), {
    jobId: 'd4.triage',
    timestamp: Date.now() - 2 * hour,
    attempts: 2,
    backoff: { type: 'fixed', delay: hour },
  });
  const old = new Worker(
    LEGACY_RUNS_QUEUE,
    async () => {
      throw new Error('the feedback API was down');
    },
    { connection: { url: inject('redisUrl'), maxRetriesPerRequest: null }, prefix: env.prefix },
  );
  await new Promise<void>((resolve) => old.on('failed', () => resolve()));
  await old.close();
  expect(await legacy.getJobCounts('delayed')).toEqual({ delayed: 1 });
  const runQueues = createRunQueues(env.connection, env.prefix);
  cleanup.push(() => runQueues.close());

  expect(
    await moveLegacyRuns({
      connection: env.connection,
      prefix: env.prefix,
      runQueues,
      dedupeTtlSeconds: 3600,
      retention: handlerRunRetention(60),
    }),
  ).toEqual({ moved: 1, failedLeft: 0, activeLeft: 0 });
  const moved = await runQueues.of('triage').getJob('d4.triage');
  expect(await moved?.getState(), 'still backing off').toBe('delayed');
  expect(moved?.delay).toBeGreaterThan(hour / 2);
});
