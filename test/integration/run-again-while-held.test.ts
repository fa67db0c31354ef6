/**
 * An operator's run again is never undone by a worker that still holds the run's earlier
 * success in its completion ledger. With ACK_REPLICAS=1 on a Redis that has no replica, a worker
 * holds every success (no replica ever confirms its marker), which is the longest it can: the
 * run started afresh must run its handler all the same.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { startAfresh } from '../../src/runs/restart.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

let env: TestWorkerEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

it('runs a completed run again while the worker still holds its first success', async () => {
  env = await createTestWorkerEnv();
  const calls: string[] = [];
  const probe = defineHandler({
    name: 'probe',
    handle: ({ delivery }) => void calls.push(delivery.key),
  });
  const worker = await env.startWorker({
    handlers: [probe],
    ackReplicas: { replicas: 1, timeoutMs: 50 },
  });
  const delivery = await env.deliver({ id: 'fb_run_again_while_held' });
  await env.completedRuns(1);
  const [job] = await worker.runQueues.of('probe').getCompleted();

  expect(await startAfresh(job!, 'completed')).toBe(true);
  await vi.waitFor(() => expect(calls).toEqual([delivery.key, delivery.key]), { timeout: 5_000 });
  // And again: each run again is a life of its own.
  await vi.waitFor(async () => expect(await job!.getState()).toBe('completed'), { timeout: 5_000 });
  expect(await startAfresh(job!, 'completed')).toBe(true);
  await vi.waitFor(() => expect(calls).toHaveLength(3), { timeout: 5_000 });
  expect(env.logs).not.toContainEqual(
    expect.objectContaining({ msg: 'handler run had completed before; not run again' }),
  );
});
