/**
 * Scenario 1: Redis (append-only file on) is restarted during a steady stream of deliveries. The
 * receiver answers 503 while it is down and recovers by itself; the senders' retries complete
 * the set. Jobs whose replies the restart dropped move on once their locks expire.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 400;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('loses nothing and handles nothing twice when Redis restarts mid-stream', async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve();
  // A restart can drop the reply to a job's move to active: the job sits active, owned by no
  // one, until its lock expires and BullMQ's stalled check (every lock's length) moves it on:
  // up to two locks' lengths. A 10 s lock keeps that within the settle's minute.
  await cluster.work({ WORKER_LOCK_SECONDS: '10' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });

  const streaming = sender.stream(DELIVERIES, { prefix: 'restart', concurrency: 4 });
  await vi.waitFor(() => expect(sender.acknowledged.size >= 100, '100 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  await cluster.redis.shutdown();
  await vi.waitFor(() => expect(sender.count(503) > 0, 'a 503 while down').toBeTruthy(), {
    timeout: 10_000,
  });
  const ackedWhileDown = sender.acknowledged.size;
  await cluster.redis.start();
  await streaming;
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  // Deliveries went on after the restart without restarting anything else.
  expect(ackedWhileDown).toBeLessThan(DELIVERIES);

  finishScenario({
    scenario: '1. Redis restarted mid-stream',
    result,
    notes: `${sender.count(503)} answers 503 while Redis was down, then recovered by itself`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
