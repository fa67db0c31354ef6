/**
 * Scenario 17: an operator sets a global concurrency of 1 on a handler's queue (one click in
 * bull-board) while a backlog waits: BullMQ holds the jobs back, and the same worker drains it,
 * one run at a time, with no worker recreated and no warning.
 */
import { afterAll, expect, it } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 100;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('restarts no worker while a global concurrency of 1 holds a backlog back', async () => {
  cluster = await startCluster();
  await cluster.handlerRuns.setGlobalConcurrency(1);
  const receiver = await cluster.serve();
  // Room for 4 at once in the worker, and runs of 100 ms: with one run at a time, jobs wait 10 s
  // in all while the worker has room for them.
  const worker = await cluster.work({ WORKER_CONCURRENCY: '4', HANDLER_DELAY_MS: '100' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  const started = Date.now();
  await sender.stream(DELIVERIES, { prefix: 'held', concurrency: 4 });
  await settle(cluster, sender.acknowledged);
  const seconds = (Date.now() - started) / 1000;

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  expect(new Set(cluster.runs().map((run) => run.pid)), 'one worker process').toEqual(
    new Set([worker.child.pid]),
  );
  const warnings = worker
    .output()
    .split('\n')
    .filter((line) => line.includes('"level":40'));
  expect(warnings, "the worker's warnings").toEqual([]);
  // One run at a time, really: the backlog took at least the sum of its runs.
  expect(seconds, 'seconds to drain').toBeGreaterThanOrEqual((DELIVERIES * 100) / 1000);

  finishScenario({
    scenario: '17. a global concurrency of 1 on a handler queue',
    result,
    notes: `${DELIVERIES} runs of 100 ms drained one at a time in ${seconds.toFixed(1)} s by one worker process, with no warning`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
