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

it('shares a backlog among more workers, and handles everything once', async () => {
  cluster = await startCluster();
  const receivers = [await cluster.serve(), await cluster.serve()];
  const sender = createSender({ targets: () => receivers.map((r) => r.url), secret: SECRET });

  /**
   * Queues a backlog with no worker running, then times `workers` workers draining it. Returns
   * the rate, for the report, and how many runs each worker made.
   */
  const drain = async (phase: string, workers: number) => {
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
    const runs = cluster.runs();
    const runsBy = started.map((cli) => runs.filter((run) => run.pid === cli.child.pid).length);
    await Promise.all(started.map((cli) => cluster.stop(cli)));
    return { perSecond, runsBy };
  };

  const oneWorker = await drain('one', 1);
  const threeWorkers = await drain('three', 3);
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(2 * BACKLOG);
  // The three shared the backlog: each made runs of it. (How much faster they drained it is
  // reported, not asserted: on two shared cores a rate says as much about the machine.)
  for (const runs of threeWorkers.runsBy) expect(runs).toBeGreaterThan(0);

  finishScenario({
    scenario: '7. two receivers, three workers',
    result,
    notes: `${BACKLOG} deliveries drained at ${oneWorker.perSecond.toFixed(0)}/s by 1 worker, ${threeWorkers.perSecond.toFixed(0)}/s by 3 (${(threeWorkers.perSecond / oneWorker.perSecond).toFixed(1)}x; runs per worker ${threeWorkers.runsBy.join(', ')})`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
