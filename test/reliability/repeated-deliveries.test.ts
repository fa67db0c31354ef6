/**
 * Scenario 6: every delivery is sent three times at once, through two receivers, and three times
 * again after job retention has removed its first jobs. Each is handled once.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { findDelivery } from '../../src/queue/deliveries-queue.js';
import type { HandlerRunData } from '../../src/runs/run-queues.js';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender, keyOf } from './harness/sender.js';

const DELIVERIES = 60;
const COPIES = 3;
let cluster: Cluster;

afterAll(() => cluster?.close());

it('handles a delivery sent three times at once, and three times after retention, once', async () => {
  cluster = await startCluster();
  // Finished jobs are removed a second after they finish; deduplication must not depend on them.
  const retention = { COMPLETED_JOB_RETENTION_SECONDS: '1' };
  const receivers = [await cluster.serve(retention), await cluster.serve(retention)];
  await cluster.work(retention);
  const sender = createSender({ targets: () => receivers.map((r) => r.url), secret: SECRET });
  const ids = Array.from({ length: DELIVERIES }, (_, n) => `fb_repeat_${n + 1}`);
  const sendEachThreeTimes = () =>
    Promise.all(
      ids.flatMap((id) =>
        Array.from({ length: COPIES }, () => sender.deliver({ id, title: `Record ${id}` })),
      ),
    );

  const first = await sendEachThreeTimes();
  await settle(cluster, sender.acknowledged);
  // The first runs' ids, read from the handler's queue: retention (1 s) may already have removed
  // a routing job by now on a loaded machine, and a run it removed is gone, as wanted below.
  const ours = new Set(ids.map(keyOf));
  const firstRuns = (await cluster.handlerRuns.getCompleted(0, -1))
    .filter((job) => ours.has((job.data as HandlerRunData).delivery.key))
    .map((job) => job.id!);

  // Retention runs when later jobs finish: keep a trickle of other deliveries going until every
  // first job is gone from both queues.
  let filler = 0;
  const jobsLeft = async () => {
    const left = await Promise.all([
      ...ids.map((id) => findDelivery(cluster.deliveries, keyOf(id))),
      ...firstRuns.map((runId) => cluster.handlerRuns.getJob(runId)),
    ]);
    return left.filter(Boolean).length;
  };
  await vi.waitFor(
    async () => {
      await sender.deliver({ id: `fb_filler_${(filler += 1)}` });
      expect(await jobsLeft(), 'first jobs not yet removed by retention').toBe(0);
    },
    { timeout: 30_000, interval: 250 },
  );

  const again = await sendEachThreeTimes();
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES + filler);
  // After retention, every copy was recognised: answered 200 duplicate, none queued again.
  expect(again.every((status) => status === 200)).toBe(true);
  const queuedFirst = first.filter((status) => status === 202).length;

  finishScenario({
    scenario: '6. every delivery sent 3 times, and 3 times after retention',
    result,
    notes: `${DELIVERIES * COPIES * 2} posts for ${DELIVERIES} deliveries (+${filler} fillers): ${queuedFirst} answered 202 queued, the rest 200 duplicate; all ${DELIVERIES * COPIES} posts after retention 200 duplicate`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
