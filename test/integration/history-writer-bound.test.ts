/**
 * The history writer while Redis does not answer: what it holds, waiting or being written, stays
 * within its cap, what is past the cap is dropped and said so, and what it held is written once
 * Redis answers again.
 */
import { setTimeout as pace } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { historyKeys } from '../../src/history/delivery-history.js';
import { createHistoryWriter, MOST_HELD } from '../../src/history/history-writer.js';
import { createLogger } from '../../src/logger.js';
import { createWorkerConnection, type RedisConnection } from '../../src/queue/redis.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

const ROUTINGS = 100_000;
const CHUNK = 1_000;
const prefix = 'test-history-bound';

let redis: RedisServer;
let connection: RedisConnection;
const logs: Record<string, unknown>[] = [];
const logger = createLogger({
  level: 'info',
  destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
});

beforeEach(async () => {
  redis = await startRedisServer();
  connection = createWorkerConnection(redis.url, logger);
  await vi.waitFor(() => expect(connection.status).toBe('ready'), { timeout: 5_000 });
});

afterEach(async () => {
  redis.resume();
  connection.disconnect();
  await redis.stop();
});

function delivery(n: number): Delivery {
  return {
    key: `feedback.created:fb_${n}`,
    event: 'feedback.created',
    receivedAt: new Date(Date.now() - 60_000 + n).toISOString(),
    record: {
      id: `fb_${n}`,
      title: `Checkout broken ${n}`,
      description: 'The button does nothing',
    },
  };
}

describe('the history writer while Redis does not answer', () => {
  it('holds at most its cap, says it drops the rest, and writes what it held once Redis answers', async () => {
    const writer = createHistoryWriter({ connection, prefix, ttlSeconds: 86_400, logger });
    // SIGSTOP: the server keeps its socket and answers nothing, so the first batch never settles.
    redis.pause();
    for (let start = 0; start < ROUTINGS; start += CHUNK) {
      for (let n = start; n < start + CHUNK; n += 1)
        writer.routed(delivery(n), `job-${n}`, ['triage']);
      // Routings arrive over time, as from a worker: the writer's flush timer gets its turns.
      await pace(25);
    }

    expect(logs).toContainEqual(
      expect.objectContaining({ level: 40, msg: expect.stringMatching(/not keeping up/) }),
    );

    expect(writer.held).toBeLessThanOrEqual(MOST_HELD);

    redis.resume();
    await vi.waitFor(() => expect(writer.held).toBe(0), { timeout: 60_000, interval: 50 });
    await writer.close();
    // One entry per routing that was held; none of those dropped.
    expect(Number(await connection.get(historyKeys(prefix).seq))).toBe(MOST_HELD);
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 40, dropped: ROUTINGS - MOST_HELD }),
    );
  }, 120_000);
});
