/**
 * Scenarios 11 and 14: the Redis primary is SIGKILLed under load. A primary, one replica and
 * three sentinels; the receiver acknowledges only what the replica holds (ACK_REPLICAS=1), so
 * whatever the kill loses was never acknowledged. A sentinel promotes the replica; the old
 * primary comes back as a replica of it. The worker that was consuming goes on consuming on the
 * new primary by itself (BullMQ reconnects its blocking connection), without a restart of the
 * process.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it, vi } from 'vitest';
import { createRedisRateLimiter } from '../../src/queue/api-rate-limiter.js';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import { expectInvariant, settle, tally } from './harness/invariant.js';
import { startSentinelRedis, type SentinelRedis } from '../helpers/redis-topologies.js';
import { finishScenario } from './harness/report-row.js';
import { createSender } from './harness/sender.js';

const DELIVERIES = 300;
let cluster: Cluster<SentinelRedis>;

afterAll(() => cluster?.close());

it('acknowledges only what survives the loss of the primary, and everything resumes by itself', async () => {
  cluster = await startCluster(startSentinelRedis);
  const { redis } = cluster;
  const oldPrimary = await redis.currentPrimary();
  const receiver = await cluster.serve({ ACK_REPLICAS: '1', ACK_REPLICAS_TIMEOUT_MS: '1000' });
  const worker = await cluster.work({ ACK_REPLICAS: '1', HANDLER_DELAY_MS: '5' });
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });

  const streaming = sender.stream(DELIVERIES, { prefix: 'failover', concurrency: 4 });
  await vi.waitFor(() => expect(sender.acknowledged.size >= 100, '100 acks').toBeTruthy(), {
    timeout: 30_000,
  });
  const runsBeforeKill = cluster.runs().length;
  const killedAt = Date.now();
  await redis.primary.kill();
  const readiness = probeReadiness(`${receiver.base}/readyz`);
  await vi.waitFor(
    async () =>
      expect(await redis.currentPrimary(), 'a sentinel to promote the replica').not.toBe(
        oldPrimary,
      ),
    { timeout: 30_000, interval: 200 },
  );
  const promotedAt = Date.now();
  // The old primary comes back, and the sentinels make it a replica of the new one.
  await redis.primary.start();
  await streaming;
  // Restarted, the old primary answers with what its append-only file kept (runs the failover
  // lost among them) until the sentinels have made it a replica and it has synced: the suite's
  // reads wait for that, so that whichever node they reach shows what the new primary holds.
  await vi.waitFor(
    async () => {
      const client = redis.primary.client();
      try {
        expect((await client.role())[0], 'the old primary to come back as a replica').toBe('slave');
        expect(await client.info('replication'), 'and to have synced').toMatch(
          /master_link_status:up/,
        );
      } finally {
        client.disconnect();
      }
    },
    { timeout: 30_000, interval: 200 },
  );
  await settle(cluster, sender.acknowledged, { timeoutMs: 90_000 });

  const result = await tally(cluster, sender.sent, sender.acknowledged);
  expectInvariant(result);
  expect(result.acknowledged).toBe(DELIVERIES);
  // Not ready while no primary answered, ready again on the new one, without a restart.
  const probes = await readiness;
  expect(probes, '/readyz after the kill').toContain(503);
  expect(probes.at(-1)).toBe(200);

  // The shared state works on the new primary: the quarantine, and the API's rate limiter.
  const body = JSON.stringify({ id: 'fb_after_failover', rating: 'five' });
  const quarantined = await fetch(receiver.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Ybug-Signature': signHmacSha256(body, SECRET),
    },
    body,
  });
  expect(quarantined.status).toBe(202);
  const { id } = (await quarantined.json()) as { id: string };
  expect((await cluster.quarantine.get(id))?.body.toString()).toBe(body);
  const limiter = createRedisRateLimiter({
    connection: cluster.client,
    prefix: cluster.prefix,
    limit: 2,
  });
  expect([await limiter.acquire(), await limiter.acquire()]).toEqual([0, 0]);
  expect(await limiter.acquire(), 'the third slot of two').toBeGreaterThan(0);

  // The first delivery sent after the kill that was acknowledged.
  const firstAckAfterKill = sender.timeline.find(
    (answer) => answer.at - answer.ms > killedAt && answer.status >= 200 && answer.status < 300,
  );
  expect(firstAckAfterKill, 'a 2xx after the kill').toBeDefined();
  const seconds = (at: number) => ((at - killedAt) / 1000).toFixed(1);
  // Stored on the new primary, though not yet acknowledged: it had no replica until the old
  // primary came back as one.
  const firstStoredAfterKill = sender.timeline.find(
    (answer) => answer.at - answer.ms > killedAt && answer.code === 'QUEUE_NOT_REPLICATED',
  );
  const refused = sender.timeline.filter((answer) => answer.at > killedAt && answer.status >= 500);

  // Scenario 14: the worker process that consumed before the kill made runs after it, and is
  // still the same process.
  const workerPid = worker.child.pid!;
  const runsAfterKill = cluster.runs().slice(runsBeforeKill);
  expect(runsAfterKill.length, 'runs after the kill').toBeGreaterThan(0);
  expect(new Set(runsAfterKill.map((run) => run.pid))).toEqual(new Set([workerPid]));
  expect(worker.child.exitCode).toBeNull();

  finishScenario({
    scenario: '11. Redis primary SIGKILLed under load (Sentinel, ACK_REPLICAS=1)',
    result,
    notes: `first 2xx ${seconds(firstAckAfterKill!.at)} s after the kill: the replica was promoted after ${seconds(promotedAt)} s, deliveries were stored on it from ${firstStoredAfterKill ? `${seconds(firstStoredAfterKill.at)} s` : 'the first 2xx'} (503 QUEUE_NOT_REPLICATED until the old primary had come back as its replica); ${refused.length} answers 5xx meanwhile, all retried; /readyz 503 ${probes.filter((status) => status === 503).length} times, then 200; the quarantine and the rate limiter work on the new primary`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET],
  });
  finishScenario({
    scenario: '14. a worker through the failover',
    notes: `the same worker process made ${runsAfterKill.length} runs after the kill, BullMQ's workers reconnected by themselves`,
    output: cluster.output(),
    answers: [],
    secrets: [SECRET],
  });
});

/** Probes `url` every 100 ms until it has answered 503 and then 200 (for at most a minute). */
async function probeReadiness(url: string): Promise<number[]> {
  const statuses: number[] = [];
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const status = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.status,
      () => 0,
    );
    statuses.push(status);
    if (status === 200 && statuses.includes(503)) break;
    await sleep(100);
  }
  return statuses;
}
