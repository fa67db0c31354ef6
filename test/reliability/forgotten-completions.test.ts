/**
 * Scenario 15: a failover forgets that runs completed. Deliveries are acknowledged (the replica
 * holds them), then the replica is cut off (SIGSTOPped, and its link closed by the primary, as a
 * network partition would) while a worker handles every one of them, so the primary alone knows
 * they completed. The primary is SIGKILLed and the replica, running again, is promoted: on it
 * every delivery waits to be routed, as if nothing had run. The worker, with ACK_REPLICAS=1,
 * held each success until a replica had its record, so it runs none of them again.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { startSentinelRedis, type SentinelRedis } from '../helpers/redis-topologies.js';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 60;
let cluster: Cluster<SentinelRedis>;

afterAll(() => cluster?.close());

it('runs nothing again that completed before a failover lost its record', async () => {
  cluster = await startCluster(startSentinelRedis);
  const { redis } = cluster;
  const oldPrimary = await redis.currentPrimary();
  const receiver = await cluster.serve({ ACK_REPLICAS: '1' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  await sender.stream(DELIVERIES, { prefix: 'forgotten', concurrency: 4 });
  expect(sender.acknowledged.size, 'acknowledged before the replica stops').toBe(DELIVERIES);

  redis.replica.pause();
  const primary = redis.primary.client();
  try {
    // A stopped replica's kernel would still take in what the primary sends; a closed link does not.
    await primary.call('CLIENT', 'KILL', 'TYPE', 'replica');
  } finally {
    primary.disconnect();
  }
  const worker = await cluster.work({ ACK_REPLICAS: '1' });
  // Every delivery routed and every run completed on the primary: the replica has none of it.
  await vi.waitFor(
    async () => {
      expect(
        (await cluster.deliveries.getJobCounts('completed')).completed,
        'routing jobs completed on the primary',
      ).toBe(DELIVERIES);
      expect(
        (await cluster.handlerRuns.getJobCounts('completed')).completed,
        'runs completed on the primary',
      ).toBe(DELIVERIES);
    },
    { timeout: 30_000, interval: 100 },
  );
  expect(cluster.effects()).toHaveLength(DELIVERIES);

  await redis.primary.kill();
  redis.replica.resume();
  await vi.waitFor(
    async () =>
      expect(await redis.currentPrimary(), 'a sentinel to promote the replica').not.toBe(
        oldPrimary,
      ),
    { timeout: 40_000, interval: 200 },
  );
  // On the new primary the deliveries wait to be routed again; the worker takes each of them,
  // and either knows it ran or runs it again. (The old primary stays down: started again, it
  // would hold the completions until the sentinels made it a replica.)
  const notRunAgain = () => (worker.output().match(/not run again/g) ?? []).length;
  await vi.waitFor(
    () =>
      expect(
        notRunAgain() + cluster.effects().length - DELIVERIES,
        'deliveries taken again on the new primary',
      ).toBe(DELIVERIES),
    { timeout: 60_000, interval: 100 },
  );
  await settle(cluster, sender.acknowledged, { timeoutMs: 30_000 });

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(notRunAgain(), 'runs the worker recognised as done').toBe(DELIVERIES);
  expect(worker.child.exitCode).toBeNull();

  finishScenario({
    scenario: '15. completions a failover lost (Sentinel, ACK_REPLICAS=1 on the worker)',
    result,
    notes: `${DELIVERIES} deliveries handled while the replica was stopped, then the primary SIGKILLed and the replica promoted: on it all ${DELIVERIES} waited to be routed again; the worker recognised ${notRunAgain()} as done and ran none again`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
});
