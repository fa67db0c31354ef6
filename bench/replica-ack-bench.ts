/**
 * What ACK_REPLICAS costs: the receiver's answer latency with 0 (acknowledge what the primary
 * holds) and 1 (acknowledge what the replica holds too), against a primary with one replica,
 * at the same offered load (open loop). Both Redis servers run on the other core.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startEmbeddedRedis } from '../src/cli/embedded-redis.js';
import { freePort } from '../src/cli/free-port.js';
import type { OpenLoopResult, OpenLoopSettings } from './open-loop-client.js';
import type { Pinning } from './pinning.js';
import { here, runJsonProcess, startReceiverUnderTest } from './processes.js';

export interface ReplicaAckRow {
  readonly ackReplicas: number;
  readonly perSecond: number;
  readonly sent: number;
  readonly acknowledged: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const SECRET = 'bench-replica-ack-secret-0123456789';
const OPEN_LOOP = here('./open-loop-client.js');

export async function benchReplicaAcks(options: {
  readonly pinning: Pinning;
  readonly perSecond: number;
  readonly seconds: number;
}): Promise<ReplicaAckRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-bench-replica-'));
  const primary = await startEmbeddedRedis({ dir: join(dir, 'primary'), appendOnly: false });
  const replica = await startEmbeddedRedis({ dir: join(dir, 'replica'), appendOnly: false });
  for (const server of [primary, replica]) {
    if (server.process.pid !== undefined) options.pinning.pin(server.process.pid, 'rest');
  }
  const client = new Redis(primary.url);
  const replicaClient = new Redis(replica.url);
  try {
    await replicaClient.replicaof('127.0.0.1', primary.port);
    const deadline = Date.now() + 30_000;
    while (!/slave0:.*state=online/.test(await client.info('replication'))) {
      if (Date.now() > deadline) throw new Error('the replica did not come in sync');
      await sleep(100);
    }
    const rows: ReplicaAckRow[] = [];
    for (const ackReplicas of [0, 1]) {
      const port = await freePort();
      const receiver = await startReceiverUnderTest(options.pinning, port, {
        secret: SECRET,
        redisUrl: primary.url,
        prefix: `bench-ack-${ackReplicas}`,
        env: { ACK_REPLICAS: String(ackReplicas) },
      });
      try {
        const settings = (seconds: number): OpenLoopSettings => ({
          url: `${receiver.url}/webhooks/feedback`,
          perSecond: options.perSecond,
          seconds,
          secret: SECRET,
          runId: randomUUID().slice(0, 8),
        });
        // A second of warm-up, so neither setting's figures carry the receiver's start.
        await runJsonProcess<OpenLoopResult>(options.pinning, OPEN_LOOP, settings(1));
        const result = await runJsonProcess<OpenLoopResult>(
          options.pinning,
          OPEN_LOOP,
          settings(options.seconds),
        );
        const row = {
          ackReplicas,
          perSecond: options.perSecond,
          sent: result.sent,
          acknowledged: result.ok,
          p50Ms: result.answerP50Ms,
          p99Ms: result.answerP99Ms,
        };
        process.stderr.write(
          `ACK_REPLICAS=${ackReplicas} at ${row.perSecond}/s: ${row.acknowledged} of ${row.sent} acknowledged, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms\n`,
        );
        rows.push(row);
      } finally {
        await receiver.stop();
      }
    }
    return rows;
  } finally {
    client.disconnect();
    replicaClient.disconnect();
    await replica.stop();
    await primary.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
