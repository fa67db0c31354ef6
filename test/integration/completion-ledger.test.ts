/**
 * The completion ledger with ACK_REPLICAS=1 against a real primary and replica: a success is
 * held in memory until the replica has its marker, so that a failover promoting the replica
 * cannot make the worker forget it; without replicas to wait for, the primary's copy is enough.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import {
  closeConnection,
  createWorkerConnection,
  waitForRedis,
  type RedisConnection,
} from '../../src/queue/redis.js';
import { succeededMarkerKey } from '../../src/runs/run-queues.js';
import {
  createCompletionLedger,
  HOLD_AT_MOST_MS,
  type CompletionLedger,
} from '../../src/worker/completion-ledger.js';
import { startPrimaryWithReplica, type ReplicatedRedis } from '../helpers/redis-topologies.js';

let redis: ReplicatedRedis;
let connection: RedisConnection;
const ledgers: CompletionLedger[] = [];
const logs: { msg: string }[] = [];
const logger = createLogger({
  level: 'info',
  destination: { write: (line: string) => void logs.push(JSON.parse(line) as { msg: string }) },
});

beforeAll(async () => {
  redis = await startPrimaryWithReplica();
  connection = createWorkerConnection(redis.url, createLogger({ level: 'silent' }));
  await waitForRedis(connection, redis.url);
}, 30_000);

afterEach(async () => {
  redis.replica.resume();
  await Promise.all(ledgers.splice(0).map((ledger) => ledger.close()));
});

afterAll(async () => {
  await closeConnection(connection);
  await redis.stop();
});

function openLedger(
  replicas: number,
  on: RedisConnection = connection,
  confirmWithinMs?: number,
  ttlSeconds = 60,
) {
  const prefix = `ledger-${randomUUID()}`;
  const ledger = createCompletionLedger({
    connection: on,
    prefix,
    ttlSeconds,
    logger,
    acks: { replicas, timeoutMs: 200 },
    ...(confirmWithinMs ? { confirmWithinMs } : {}),
  });
  ledgers.push(ledger);
  return { ledger, marker: (runId: string) => succeededMarkerKey(prefix, runId) };
}

async function onReplica(key: string): Promise<number> {
  const replica = redis.replica.client();
  try {
    return await replica.exists(key);
  } finally {
    replica.disconnect();
  }
}

it('holds a success until the replica has its marker, then lets it go', async () => {
  const { ledger, marker } = openLedger(1);
  const failures = () =>
    logs.filter((line) => line.msg.startsWith('could not record completed handler runs')).length;
  const before = failures();
  redis.replica.pause();
  ledger.succeeded('run-1', 'job-1', Date.now());
  ledger.confirmed('run-1', 'job-1');

  // The primary has the marker, the stopped replica cannot confirm it: still held.
  await vi.waitFor(() => expect(failures(), 'a WAIT that timed out').toBeGreaterThan(before), {
    timeout: 5_000,
  });
  expect(await connection.exists(marker('run-1'))).toBe(1);
  expect(ledger.holds('run-1')).toBe(true);
  expect(await ledger.has('run-1')).toBe(true);

  redis.replica.resume();
  await vi.waitFor(() => expect(ledger.holds('run-1'), 'let go once replicated').toBe(false), {
    timeout: 10_000,
  });
  expect(await onReplica(marker('run-1'))).toBe(1);
  expect(await ledger.has('run-1'), 'the marker still says so').toBe(true);
});

it('holds a queued run until BullMQ confirms it, then until the replica has its marker', async () => {
  const { ledger, marker } = openLedger(1);
  redis.replica.pause();
  ledger.succeeded('run-2', 'job-2', Date.now());
  expect(ledger.holds('run-2')).toBe(true);
  ledger.confirmed('run-2', 'job-2');
  await vi.waitFor(async () => expect(await connection.exists(marker('run-2'))).toBe(1), {
    timeout: 5_000,
  });
  expect(ledger.holds('run-2'), 'the replica has not confirmed it').toBe(true);

  redis.replica.resume();
  await vi.waitFor(() => expect(ledger.holds('run-2')).toBe(false), { timeout: 10_000 });
  expect(await onReplica(marker('run-2'))).toBe(1);
});

it('without replicas to wait for, lets a success go once BullMQ confirms it, with no marker', async () => {
  const { ledger, marker } = openLedger(0);
  ledger.succeeded('run-4', 'job-4', Date.now());
  expect(ledger.holds('run-4')).toBe(true);
  ledger.confirmed('run-4', 'job-4');
  expect(ledger.holds('run-4')).toBe(false);
  expect(await connection.exists(marker('run-4')), "BullMQ's completion is the record").toBe(0);
});

it("lets a success go on its own job's confirmation only, not another's of the same run", async () => {
  // A delivery sent again as a new job (after a failover lost it): its run has the same success
  // key and is recognised as done; its job's completion says nothing of the first job's.
  const { ledger } = openLedger(0);
  ledger.succeeded('run-8', 'job-8', Date.now());
  ledger.confirmed('run-8', 'job-8-sent-again');
  expect(ledger.holds('run-8'), 'still held').toBe(true);
  ledger.confirmed('run-8', 'job-8');
  expect(ledger.holds('run-8')).toBe(false);
});

it('writes a marker for a success BullMQ does not confirm in time, the connection up', async () => {
  const { ledger, marker } = openLedger(0, connection, 100);
  ledger.succeeded('run-7', 'job-7', Date.now());
  await vi.waitFor(async () => expect(await connection.exists(marker('run-7'))).toBe(1), {
    timeout: 5_000,
  });
  expect(ledger.holds('run-7'), 'let go once written').toBe(false);
});

it('writes a marker that lasts as long as the delivery is remembered', async () => {
  const { ledger, marker } = openLedger(0, connection, undefined, 3_600); // DEDUPE_TTL_SECONDS
  ledger.succeeded('run-9', 'job-9', Date.now() - 1_800_000);
  await ledger.close();
  const ttl = await connection.pttl(marker('run-9'));
  expect(ttl, "what is left of the delivery's hour").toBeGreaterThan(1_795_000);
  expect(ttl).toBeLessThanOrEqual(1_800_000);
});

it('writes a marker for an unconfirmed success whose delivery is no longer remembered: its job comes back', async () => {
  // A run that waited in its queue past DEDUPE_TTL_SECONDS (a paused queue, a backlog), whose
  // completion Redis refused: its own job runs again once its lock expires, and asks for this.
  const { ledger, marker } = openLedger(0); // DEDUPE_TTL_SECONDS 60
  const receivedAt = Date.now() - 61_000;
  ledger.succeeded('run-10', 'job-10', receivedAt);
  await ledger.close();
  expect(await connection.exists(marker('run-10')), 'its own job may come back').toBe(1);
  expect(await ledger.has('run-10', receivedAt), 'its own job').toBe(true);
  expect(await ledger.has('run-10', Date.now()), 'a delivery received again is new').toBe(false);
  const ttl = await connection.pttl(marker('run-10'));
  expect(ttl, 'as long as the ledger would have held it').toBeGreaterThan(HOLD_AT_MOST_MS - 5_000);
  expect(ttl).toBeLessThanOrEqual(HOLD_AT_MOST_MS);
});

it('writes a marker at close for a success BullMQ has not confirmed', async () => {
  const { ledger, marker } = openLedger(0);
  ledger.succeeded('run-5', 'job-5', Date.now());
  await ledger.close();
  expect(await connection.exists(marker('run-5'))).toBe(1);
});

it('logs the runs at error when Redis is away at close, and closes all the same', async () => {
  const away = createWorkerConnection(redis.url, createLogger({ level: 'silent' }));
  await waitForRedis(away, redis.url);
  const { ledger } = openLedger(0, away);
  ledger.succeeded('run-6', 'job-6', Date.now());
  redis.primary.pause();
  try {
    // The worker's connection waits for Redis; closing does not.
    await ledger.close();
  } finally {
    redis.primary.resume();
    away.disconnect();
  }
  expect(logs).toContainEqual(
    expect.objectContaining({ level: 50, runs: ['run-6'] }) as unknown as { msg: string },
  );
});
