/**
 * Scenario 12: the only replica stops answering (SIGSTOP) while the receiver acknowledges only
 * what one replica holds (ACK_REPLICAS=1). Deliveries are refused with 503 QUEUE_NOT_REPLICATED
 * within the timeout and a margin; once the replica runs again (SIGCONT) they are acknowledged
 * again, the retries of refused ones that had been written among them as duplicates.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { startPrimaryWithReplica, type ReplicatedRedis } from '../helpers/redis-topologies.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 200;
const TIMEOUT_MS = 1_000;
/** Beyond the timeout, for the answer to travel on a busy two-core machine. */
const MARGIN_MS = 1_500;
let cluster: Cluster<ReplicatedRedis>;

afterAll(() => cluster?.close());

it('refuses what the stalled replica does not hold, and acknowledges nothing twice', async () => {
  cluster = await startCluster(startPrimaryWithReplica);
  const { redis } = cluster;
  const receiver = await cluster.serve({
    ACK_REPLICAS: '1',
    ACK_REPLICAS_TIMEOUT_MS: String(TIMEOUT_MS),
  });
  await cluster.work();
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });

  const streaming = sender.stream(DELIVERIES, { prefix: 'stall', concurrency: 4 });
  await vi.waitFor(() => expect(sender.acknowledged.size >= 50, '50 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  redis.replica.pause();
  const pausedAt = Date.now();
  await vi.waitFor(
    () => {
      const refused = sender.timeline.filter((answer) => answer.code === 'QUEUE_NOT_REPLICATED');
      expect(refused.length, '503 QUEUE_NOT_REPLICATED answers').toBeGreaterThanOrEqual(12);
    },
    { timeout: 30_000 },
  );
  redis.replica.resume();
  const resumedAt = Date.now();
  await streaming;
  await settle(cluster, sender.acknowledged);

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);

  // Every request sent while the replica was stopped, and answered before it ran again, was
  // refused as not replicated, in time.
  const duringStall = sender.timeline.filter(
    (answer) => answer.at - answer.ms > pausedAt && answer.at < resumedAt,
  );
  expect(duringStall.length).toBeGreaterThan(0);
  for (const answer of duringStall) {
    expect(answer).toMatchObject({ status: 503, code: 'QUEUE_NOT_REPLICATED' });
    expect(answer.ms).toBeLessThanOrEqual(TIMEOUT_MS + MARGIN_MS);
  }
  const slowest = Math.max(...duringStall.map((answer) => answer.ms));
  const afterResume = sender.timeline.filter((answer) => answer.at - answer.ms > resumedAt);
  expect(afterResume.some((answer) => answer.status === 202)).toBe(true);

  finishScenario({
    scenario: '12. the replica stalled (SIGSTOP), ACK_REPLICAS=1',
    result,
    notes: `${duringStall.length} deliveries sent during the stall, all answered 503 QUEUE_NOT_REPLICATED, the slowest in ${slowest} ms (timeout ${TIMEOUT_MS} ms); after SIGCONT ${sender.count(200)} retries answered 200 duplicate (written, not acknowledged) and handled once`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
