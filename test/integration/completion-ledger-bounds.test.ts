/**
 * What the completion ledger holds is bounded, and what it writes is written once: with
 * ACK_REPLICAS=1 on a Redis that has no replica (a WAIT that never succeeds), a held success's
 * marker is not rewritten while only its WAIT is repeated, and past the ledger's bounds (by count
 * and by age) successes are let go with a warning. Commands are counted with INFO commandstats on
 * a private redis-server, so nothing else's commands are counted.
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
  type CompletionLedger,
  type CompletionLedgerOptions,
} from '../../src/worker/completion-ledger.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

const RUNS = 5_000;
let redis: RedisServer;
let connection: RedisConnection;
const ledgers: CompletionLedger[] = [];
const logs: { msg: string; level: number; runs?: unknown }[] = [];
const logger = createLogger({
  level: 'info',
  destination: { write: (line: string) => void logs.push(JSON.parse(line) as never) },
});

beforeAll(async () => {
  redis = await startRedisServer();
  connection = createWorkerConnection(redis.url, createLogger({ level: 'silent' }));
  await waitForRedis(connection, redis.url);
}, 30_000);

afterEach(async () => {
  await Promise.all(ledgers.splice(0).map((ledger) => ledger.close()));
  logs.length = 0;
});

afterAll(async () => {
  await closeConnection(connection);
  await redis.stop();
});

/** A ledger with ACK_REPLICAS=1 on a Redis without a replica: no WAIT ever confirms. */
function openLedger(options: Partial<CompletionLedgerOptions> = {}) {
  const prefix = `ledger-${randomUUID()}`;
  const ledger = createCompletionLedger({
    connection,
    prefix,
    ttlSeconds: 600,
    logger,
    acks: { replicas: 1, timeoutMs: 50 },
    ...options,
  });
  ledgers.push(ledger);
  return { ledger, marker: (key: string) => succeededMarkerKey(prefix, key) };
}

/** `count` runs whose handler returned and whose completion BullMQ confirmed. */
function complete(ledger: CompletionLedger, count: number, receivedAt = Date.now()): string[] {
  const keys = Array.from({ length: count }, (_, index) => `probe:d-run-${index}`);
  for (const [index, key] of keys.entries()) {
    ledger.succeeded(key, `job-${index}`, receivedAt);
    ledger.confirmed(key, `job-${index}`);
  }
  return keys;
}

/** How often Redis has run `command` since the last CONFIG RESETSTAT. */
async function calls(command: string): Promise<number> {
  const stats = (await connection.info('commandstats')) as string;
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats);
  return match ? Number(match[1]) : 0;
}

const letGoWarnings = () =>
  logs.filter(
    (line) => line.level === 40 && line.msg.startsWith('let go of completed handler runs'),
  );

it('writes each marker once, and repeats only the WAIT, while no replica confirms them', async () => {
  await connection.config('RESETSTAT');
  const { ledger, marker } = openLedger();
  const keys = complete(ledger, RUNS);

  // Every marker written, then several rounds of waiting for the replica that is not there.
  await vi.waitFor(async () => expect(await calls('wait')).toBeGreaterThanOrEqual(4), {
    timeout: 20_000,
    interval: 50,
  });
  expect(await calls('set'), 'one SET per marker, never again').toBe(RUNS);
  expect(await connection.exists(marker(keys[0]!)), 'written on the primary').toBe(1);
  expect(
    keys.filter((key) => ledger.holds(key)),
    'held until a replica has them',
  ).toHaveLength(RUNS);
});

it('holds at most its bound of runs, letting the oldest go, and says how many', async () => {
  const { ledger } = openLedger({ mostHeld: 1_000 });
  const keys = complete(ledger, RUNS);

  expect(keys.filter((key) => ledger.holds(key)).length).toBeLessThanOrEqual(1_000);
  expect(ledger.holds(keys.at(-1)!), 'the newest are kept').toBe(true);
  await vi.waitFor(() => expect(letGoWarnings()).toHaveLength(1), { timeout: 5_000 });
  expect(letGoWarnings()[0]).toMatchObject({ runs: RUNS - 1_000 });
});

it('lets a run go once held past its age bound, says so, and its marker still answers', async () => {
  // A clock of the test's: the ten runs are one age, and none is let go before its marker is
  // written, however slow the machine (on the real clock, runs a millisecond apart could be let
  // go in two warnings, the second a minute later, or before the first batch was written).
  let now = Date.now();
  const { ledger, marker } = openLedger({
    holdAtMostMs: 300,
    confirmWithinMs: 100,
    now: () => now,
  });
  const keys = complete(ledger, 10, now);
  await vi.waitFor(async () => expect(await connection.exists(...keys.map(marker))).toBe(10), {
    timeout: 10_000,
  });
  expect(
    keys.filter((key) => ledger.holds(key)),
    'held while young',
  ).toHaveLength(10);
  expect(letGoWarnings()).toEqual([]);

  now += 300;
  await vi.waitFor(() => expect(keys.filter((key) => ledger.holds(key))).toEqual([]), {
    timeout: 10_000,
  });
  await vi.waitFor(() => expect(letGoWarnings()).toHaveLength(1), { timeout: 10_000 });
  expect(letGoWarnings()[0]).toMatchObject({ runs: 10 });
  // At-least-once from here on, but the primary's marker still says the run completed.
  expect(await ledger.has(keys[0]!)).toBe(true);
});

it('writes the markers no replica has confirmed again once its connection reconnects', async () => {
  // A reconnection may reach a new primary, which lacks what the old one had not replicated.
  await connection.config('RESETSTAT');
  const { ledger } = openLedger();
  const keys = complete(ledger, 10);
  await vi.waitFor(async () => expect(await calls('set')).toBe(10), { timeout: 5_000 });

  // Every client but this one: the ledger's own connection among them.
  await connection.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
  await vi.waitFor(async () => expect(await calls('set')).toBe(20), { timeout: 10_000 });
  expect(keys.every((key) => ledger.holds(key))).toBe(true);
});
