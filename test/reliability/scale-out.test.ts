/**
 * Scenario 7: two receivers and three workers, all separate processes on one Redis. The same
 * backlog drains about three times as fast with three workers as with one (handlers that wait on
 * I/O, as most do), and the invariant holds across all of them.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';
import type { CliProcess } from '../helpers/cli-process.js';

const BACKLOG = 120;
/** Each run waits 100 ms, as on a remote API; two at a time per worker. */
const WORKER = { HANDLER_DELAY_MS: '100', WORKER_CONCURRENCY: '2' };
let cluster: Cluster;

afterAll(() => cluster?.close());

it('drains faster with more workers, and handles everything once', async () => {
  cluster = await startCluster();
  const receivers = [await cluster.serve(), await cluster.serve()];
  const sender = createSender({ targets: () => receivers.map((r) => r.url), secret: SECRET });

  /** Queues a backlog with no worker running, then times `workers` workers draining it. */
  const drain = async (phase: string, workers: number): Promise<number> => {
    await sender.stream(BACKLOG, { prefix: phase, concurrency: 8 });
    const before = cluster.effects().length;
    const started: CliProcess[] = await Promise.all(
      Array.from({ length: workers }, () => cluster.work(WORKER)),
    );
    const from = performance.now();
    await vi.waitFor(
      () =>
        expect(
          cluster.effects().length - before >= BACKLOG,
          `${workers} worker(s) to drain ${BACKLOG} deliveries`,
        ).toBeTruthy(),
      { timeout: 60_000 },
    );
    const perSecond = BACKLOG / ((performance.now() - from) / 1000);
    await Promise.all(started.map((cli) => cluster.stop(cli)));
    return perSecond;
  };

  const oneWorker = await drain('one', 1);
  const threeWorkers = await drain('three', 3);
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(2 * BACKLOG);
  // About 3x in theory; a wide margin, since the machine is shared with everything else.
  expect(threeWorkers / oneWorker).toBeGreaterThan(1.8);

  finishScenario({
    scenario: '7. two receivers, three workers',
    result,
    notes: `${BACKLOG} deliveries drained at ${oneWorker.toFixed(0)}/s by 1 worker, ${threeWorkers.toFixed(0)}/s by 3 (${(threeWorkers / oneWorker).toFixed(1)}x)`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
