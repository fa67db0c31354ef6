/**
 * ACK_REPLICAS against a real primary and replica: a write counts once the replica has it; with
 * the replica stopped it is refused in about the timeout; concurrent writes share their WAITs.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueNotReplicatedError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import {
  closeConnection,
  createProducerConnection,
  waitForRedis,
  type RedisConnection,
} from '../../src/queue/redis.js';
import { createReplicatedWrites } from '../../src/queue/replicated-writes.js';
import { startPrimaryWithReplica, type ReplicatedRedis } from '../helpers/redis-topologies.js';
import { postSigned } from '../helpers/signed-request.js';
import { createTestReceiver, type TestReceiver } from '../helpers/test-receiver.js';

const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/feedback-record.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;
let redis: ReplicatedRedis;
let connection: RedisConnection;

beforeAll(async () => {
  redis = await startPrimaryWithReplica();
  connection = createProducerConnection(redis.url, createLogger({ level: 'silent' }), {
    commandTimeoutMs: 3_000,
  });
  await waitForRedis(connection, redis.url);
}, 30_000);

afterAll(async () => {
  await closeConnection(connection);
  await redis.stop();
});

afterEach(() => redis.replica.resume());

const key = () => `replicated-${randomUUID()}`;

describe('createReplicatedWrites', () => {
  it('resolves once the replica holds the write', async () => {
    const writes = createReplicatedWrites({
      connection,
      key: 'test',
      acks: { replicas: 1, timeoutMs: 1_000 },
    });
    const written = key();
    await writes.store(() => connection.set(written, 'v'));
    const replica = redis.replica.client();
    try {
      expect(await replica.get(written)).toBe('v');
    } finally {
      replica.disconnect();
    }
  });

  it('refuses a write the stopped replica does not confirm in time, which may still exist', async () => {
    const writes = createReplicatedWrites({
      connection,
      key: 'test',
      acks: { replicas: 1, timeoutMs: 300 },
    });
    redis.replica.pause();
    const written = key();
    await expect(writes.store(() => connection.set(written, 'v'))).rejects.toThrow(
      QueueNotReplicatedError,
    );
    expect(await connection.get(written)).toBe('v');
    redis.replica.resume();
    await writes.store(() => connection.set(key(), 'v'));
  });

  it('refuses when fewer replicas exist than asked for', async () => {
    const writes = createReplicatedWrites({
      connection,
      key: 'test',
      acks: { replicas: 2, timeoutMs: 200 },
    });
    await expect(writes.store(() => connection.set(key(), 'v'))).rejects.toThrow(
      /1 of 2 replicas confirmed the write in time/,
    );
  });

  it('sends one WAIT for many writes that finish together', async () => {
    const writes = createReplicatedWrites({
      connection,
      key: 'test',
      acks: { replicas: 1, timeoutMs: 1_000 },
    });
    const waitCalls = async () =>
      Number(/cmdstat_wait:calls=(\d+)/.exec(await connection.info('commandstats'))?.[1] ?? 0);
    const before = await waitCalls();
    await Promise.all(
      Array.from({ length: 50 }, () => writes.store(() => connection.set(key(), 'v'))),
    );
    const waits = (await waitCalls()) - before;
    expect(waits).toBeGreaterThan(0);
    expect(waits).toBeLessThan(50);
  });

  it('waits for nothing when no replica is asked for', async () => {
    redis.replica.pause();
    const writes = createReplicatedWrites({ connection, key: 'test' });
    await writes.store(() => connection.set(key(), 'v'));
  });
});

describe('the webhook route with ACK_REPLICAS=1', () => {
  let receiver: TestReceiver | undefined;
  afterEach(() => receiver?.close());

  it('answers 503 QUEUE_NOT_REPLICATED with Retry-After, then duplicate for the retry', async () => {
    receiver = await createTestReceiver({
      redisUrl: redis.url,
      acks: { replicas: 1, timeoutMs: 300 },
    });
    const record = { ...fixture, id: `fb_${randomUUID().slice(0, 8)}` };
    redis.replica.pause();
    const refused = await postSigned(receiver.app, record);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.body).toMatchObject({ code: 'QUEUE_NOT_REPLICATED' });
    redis.replica.resume();
    const retried = await postSigned(receiver.app, record);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'duplicate' });
  });
});
