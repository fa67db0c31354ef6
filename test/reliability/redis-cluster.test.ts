/**
 * Scenario 13: the whole flow on a cluster-mode Redis (three primaries, one replica each, made
 * with `redis-cli --cluster create`). The receiver acknowledges what the replica of the shard
 * holding the keys has (ACK_REPLICAS=1); two workers triage against the sandbox under one shared
 * limit; a quarantined delivery is replayed and a dead-letter run retried through the CLI.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it, vi } from 'vitest';
import { SANDBOX_TOKEN } from '../../src/sandbox/seed.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { reportedUrl, runCli, type CliProcess } from '../helpers/cli-process.js';
import { createRecord as createRecordIn, recordInSandbox } from '../helpers/sandbox-client.js';
import { SECRET, startCluster, type Cluster } from './harness/cluster.js';
import {
  startClusterRedis,
  type ClusterRedis,
  type RedisNode,
} from '../helpers/redis-topologies.js';
import { createSender } from './harness/sender.js';
import { finishScenario } from './harness/report-row.js';

const RULES = fileURLToPath(new URL('../../examples/triage-rules.jsonc', import.meta.url));
/** The workers' shared limit; the sandbox allows one more, for the hook's registration. */
const LIMIT_PER_MINUTE = 6;
const BURST = 6;
let cluster: Cluster<ClusterRedis>;
let sandbox: CliProcess | undefined;

afterAll(async () => {
  sandbox?.child.kill('SIGTERM');
  await sandbox?.exited();
  await cluster?.close();
});

it('serves, triages, replays, retries and shares the rate limit on a cluster-mode Redis', async () => {
  cluster = await startCluster(startClusterRedis);
  sandbox = runCli(['sandbox', '--port', '0', '--rate-limit', String(LIMIT_PER_MINUTE + 1)], {});
  const sandboxUrl = await reportedUrl(sandbox, 'sandbox listening');
  const api = { FEEDBACK_API_URL: sandboxUrl, FEEDBACK_API_TOKEN: SANDBOX_TOKEN };
  const redisEnv = { REDIS_URL: cluster.redis.url, QUEUE_PREFIX: cluster.prefix };
  const cli = async (args: string[]) => {
    const run = runCli(args, { ...redisEnv, ...api, WEBHOOK_SECRET: SECRET });
    return { code: await run.exited(), output: run.output() };
  };
  const createRecord = (projectId: string, fields: Partial<FeedbackRecord>) =>
    createRecordIn(sandboxUrl, projectId, fields);
  const priorityOf = async (id: string) => (await recordInSandbox(sandboxUrl, id)).priority_id;

  const receiver = await cluster.serve({ ACK_REPLICAS: '1' });
  expect(
    (await cli(['hooks', 'register', '--project', 'prj_shop', '--url', receiver.url])).code,
  ).toBe(0);
  const workerEnv = {
    HANDLERS: '',
    TRIAGE_RULES: RULES,
    ...api,
    FEEDBACK_API_RATE_LIMIT: String(LIMIT_PER_MINUTE),
    ACK_REPLICAS: '1',
  };
  const workers = [await cluster.work(workerEnv), await cluster.work(workerEnv)];

  // A delivery the receiver cannot read is quarantined, listed, and kept while still invalid.
  await createRecord('prj_shop', { title: 'Rated in words', rating: 'five' as never });
  const listed = await vi.waitFor(
    async () => {
      const list = await cli(['quarantine', 'list']);
      expect(list.output, 'the quarantined delivery').toContain('rating');
      return list.output;
    },
    { timeout: 10_000 },
  );
  const quarantineId = /^(q-\S+)/m.exec(listed)?.[1] ?? '';
  expect((await cli(['quarantine', 'replay', quarantineId])).output).toMatch(/still invalid/);
  // One that passes now (kept by an older receiver whose schema was wrong) is replayed and triaged.
  const fixed = await createRecord('prj_app', {
    title: 'Checkout crashes every time',
    priority_id: 1,
  });
  await cluster.quarantine.add({
    receivedAt: new Date().toISOString(),
    reason: 'schema',
    issues: [],
    headers: {},
    body: Buffer.from(JSON.stringify(fixed)),
  });
  const replayed = await cli(['quarantine', 'replay', '--all']);
  expect(replayed.output).toContain(`queued as feedback.created:${fixed.id}`);
  await vi.waitFor(
    async () => expect(await priorityOf(fixed.id), 'the replayed delivery triaged').toBe(4),
    {
      timeout: 10_000,
    },
  );

  // A run that fails for good (the API has no such record) is in the dead letter, and retried.
  const sent = await cli(['send', '--url', receiver.url]);
  const key = /"id":"(feedback\.created:fb_[0-9a-f]+)"/.exec(sent.output)?.[1] ?? '';
  const failed = await vi.waitFor(
    async () => {
      const list = await cli(['deliveries', 'failed']);
      expect(list.output, 'the run in the dead letter').toContain(key);
      return list.output;
    },
    { timeout: 10_000 },
  );
  const runId =
    new RegExp(`^(\\S+)\\n  handler auto-triage, delivery ${key}`, 'm').exec(failed)?.[1] ?? '';
  const firstFailure = (await cluster.runQueues.of('auto-triage').getJob(runId))!.finishedOn!;
  expect(await cli(['deliveries', 'retry', runId])).toEqual({
    code: 0,
    output: `Queued ${runId} again.\n`,
  });
  await vi.waitFor(
    async () => {
      const run = await cluster.runQueues.of('auto-triage').getJob(runId);
      expect(await run?.getState(), 'the retried run to fail again').toBe('failed');
      expect(run!.finishedOn!, 'a second attempt').toBeGreaterThan(firstFailure);
    },
    { timeout: 10_000 },
  );

  // A burst beyond the shared limit: the workers wait for slots instead of meeting a 429.
  const burst: FeedbackRecord[] = [];
  for (let n = 1; n <= BURST; n += 1) {
    burst.push(await createRecord('prj_shop', { title: `The app crashes ${n}`, priority_id: 2 }));
  }
  await vi.waitFor(
    async () => {
      const priorities = await Promise.all(burst.map((record) => priorityOf(record.id)));
      expect(priorities, 'every record of the burst triaged').toEqual(burst.map(() => 4));
    },
    { timeout: 120_000, interval: 500 },
  );
  const scraped = await Promise.all(
    workers.map(async (worker) => {
      const url = await reportedUrl(
        worker,
        'worker probes listening (/healthz, /readyz, /metrics)',
      );
      return (await fetch(`${url}/metrics`)).text();
    }),
  );
  const sum = (pattern: RegExp) =>
    scraped
      .flatMap((text) => [...text.matchAll(pattern)])
      .reduce((total, match) => total + Number(match[1]), 0);
  const patches = sum(
    /^feedback_receiver_api_requests_total\{method="PATCH",status="\d+"\} (\S+)$/gm,
  );
  const throttled = sum(/^feedback_receiver_api_requests_total\{[^}]*status="429"\} (\S+)$/gm);
  const waited = sum(/^feedback_receiver_api_rate_limit_wait_seconds_total (\S+)$/gm);
  expect(throttled, 'answers 429 from the sandbox').toBe(0);
  expect(waited, 'seconds the workers waited for the shared limit').toBeGreaterThan(0);
  expect(cluster.output()).not.toMatch(/CROSSSLOT/);

  // ACK_REPLICAS applies on the shard that holds the keys: with its replica stopped, a delivery
  // is refused as not replicated; running again, the sender's retry is acknowledged.
  const replica = await replicaHolding(cluster, `{${cluster.prefix}}`);
  const sender = createSender({ targets: () => [receiver.url], secret: SECRET });
  replica.pause();
  const delivered = sender.deliver({ id: 'fb_shard_replica', title: 'While the replica sleeps' });
  try {
    await vi.waitFor(
      () =>
        expect(
          sender.timeline.map((answer) => answer.code),
          'a refusal while the replica is stopped',
        ).toContain('QUEUE_NOT_REPLICATED'),
      { timeout: 10_000 },
    );
  } finally {
    replica.resume();
  }
  expect([200, 202]).toContain(await delivered);

  finishScenario({
    scenario: '13. cluster mode: 3 primaries with a replica each, ACK_REPLICAS=1',
    notes: `serve, two workers triaging against the sandbox, a quarantined delivery replayed, a dead-letter run retried, 503 QUEUE_NOT_REPLICATED while the keys' shard's replica was stopped; ${patches} PATCHes under a shared limit of ${LIMIT_PER_MINUTE} a minute, 0 answered 429, ${waited.toFixed(0)} s waited for slots`,
    output: cluster.output(),
    answers: sender.answers,
    secrets: [SECRET, SANDBOX_TOKEN],
  });
});

/** The replica of the shard that holds `key`, as the cluster itself says. */
async function replicaHolding(cluster: Cluster<ClusterRedis>, key: string): Promise<RedisNode> {
  const client = cluster.redis.nodes[0]!.client();
  try {
    const slot = (await client.cluster('KEYSLOT', key)) as number;
    const ranges = await client.cluster('SLOTS');
    const [, , , replica] = ranges.find(([start, end]) => start <= slot && slot <= end)!;
    return cluster.redis.nodes.find((node) => node.port === replica![1])!;
  } finally {
    client.disconnect();
  }
}
