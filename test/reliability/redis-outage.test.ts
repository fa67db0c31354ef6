/**
 * Scenario 2: Redis is stopped for 30 seconds under a stream of deliveries. Meanwhile /readyz
 * answers 503 on the receiver and on the worker; afterwards both go on by themselves, and the
 * senders' retries complete the set.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 150;
const OUTAGE_MS = 30_000;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('answers 503 on /readyz while Redis is away for 30 s, then resumes by itself', async () => {
  cluster = await startCluster();
  const receiver = await cluster.serve();
  // Slow handlers keep a backlog, so runs are mid-way when Redis goes and finish while it is away.
  // A 10 s lock: a job whose reply the outage dropped moves on within the settle (see scenario 1).
  const worker = await cluster.work({ HANDLER_DELAY_MS: '1000', WORKER_LOCK_SECONDS: '10' });
  const probesLine = worker
    .output()
    .split('\n')
    .find((line) => line.includes('probes listening'));
  const workerProbes = (JSON.parse(probesLine ?? '{}') as { url?: string }).url;
  expect(workerProbes).toMatch(/^http:/);
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });

  const streaming = sender.stream(DELIVERIES, { prefix: 'outage', concurrency: 2 });
  await vi.waitFor(() => expect(sender.acknowledged.size >= 50, '50 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  await cluster.redis.shutdown();

  // For the whole outage, both processes say they are not ready.
  const readiness = { receiver: new Map<number, number>(), worker: new Map<number, number>() };
  const probe = async (url: string, seen: Map<number, number>) => {
    const status = await fetch(url).then(
      (response) => response.status,
      () => 0,
    );
    seen.set(status, (seen.get(status) ?? 0) + 1);
  };
  const until = Date.now() + OUTAGE_MS;
  while (Date.now() < until) {
    await Promise.all([
      probe(`${receiver.base}/readyz`, readiness.receiver),
      probe(`${workerProbes}/readyz`, readiness.worker),
    ]);
    await sleep(500); // the probe interval of an orchestrator
  }
  await cluster.redis.start();
  await streaming;
  await settle(cluster, sender.acknowledged);

  expect([...readiness.receiver.keys()]).toEqual([503]);
  expect([...readiness.worker.keys()]).toEqual([503]);
  expect(worker.child.exitCode).toBeNull(); // the same worker resumed, nobody restarted it
  await vi.waitFor(
    async () =>
      expect((await fetch(`${receiver.base}/readyz`)).status, 'the receiver ready again').toBe(200),
    { timeout: 5_000 },
  );

  // Runs that finished while Redis was away were not run again once it was back.
  const notRunAgain = worker.output().split('not run again').length - 1;
  expect(notRunAgain).toBeGreaterThan(0);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  const probes = readiness.receiver.get(503)! + readiness.worker.get(503)!;
  finishScenario({
    scenario: '2. Redis stopped for 30 s',
    result,
    notes: `${probes} /readyz probes all 503 during the outage; ${sender.count(503)} answers 503, retried; ${notRunAgain} runs that finished during the outage not run again`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
