import { expect, vi } from 'vitest';
/**
 * A cluster for one scenario: its own redis-server (append-only file on, so restarts keep the
 * queue), and receivers and workers started as `feedback-receiver serve` and `work` processes on
 * 127.0.0.1, with one key prefix. Every line any of them writes is kept, for the leak check.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { keyPrefix } from '../../../src/config.js';
import { DELIVERIES_QUEUE } from '../../../src/queue/deliveries-queue.js';
import { createRunQueues, runQueueName, type RunQueues } from '../../../src/runs/run-queues.js';
import { createQuarantine, type Quarantine } from '../../../src/queue/quarantine.js';
import { runCli, startServe, type CliProcess } from '../../helpers/cli-process.js';
import type { RedisConnection } from '../../../src/queue/redis.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import type { RedisUnderTest } from '../../helpers/redis-topologies.js';

export const SECRET = 'reliability-secret-7d1f0c9a4b';
export const PROBE_HANDLER = 'test/fixtures/handlers/reliability-probe.mjs';
/** The name the probe handler gives itself. */
export const PROBE_HANDLER_NAME = 'reliability-probe';

export interface Receiver {
  readonly cli: CliProcess;
  /** The webhook URL. */
  readonly url: string;
  readonly base: string;
}

/** The default: one redis-server, with its append-only file. */
export type SingleRedis = RedisServer & RedisUnderTest;

export interface Cluster<R extends RedisUnderTest = SingleRedis> {
  /** A directory of this cluster's own, removed at close. */
  readonly dir: string;
  readonly redis: R;
  /** QUEUE_PREFIX of its processes. */
  readonly prefix: string;
  /** A client for the suite's own reads; fails fast while Redis is down. */
  readonly client: RedisConnection;
  /** The probe handler's runs queue (every scenario's workers run PROBE_HANDLER). */
  readonly handlerRuns: Queue;
  /** Every handler's runs queue, as the workers announce their handlers. */
  readonly runQueues: RunQueues;
  readonly deliveries: Queue;
  readonly quarantine: Quarantine;
  /** Where the probe handler appends one line per effect (`<key>`) and per run (`<pid> <key>`). */
  readonly effectsLog: string;
  readonly runsLog: string;
  serve(env?: Record<string, string>): Promise<Receiver>;
  work(env?: Record<string, string>): Promise<CliProcess>;
  /** Sends a signal and waits for the exit code. */
  stop(cli: CliProcess, signal?: NodeJS.Signals): Promise<number | null>;
  effects(): string[];
  runs(): { pid: number; key: string }[];
  /** Every line every process of this cluster wrote. */
  output(): string;
  close(): Promise<void>;
}

async function startSingleRedis(): Promise<SingleRedis> {
  const server = await startRedisServer({ appendOnly: true });
  return Object.assign(server, {
    connect: () => {
      const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
      client.on('error', () => {}); // outages are the point here; the suite polls through them
      return client;
    },
  });
}

/** Processes on one redis-server, or on the replicated Redis that `startRedis` starts. */
export async function startCluster(): Promise<Cluster>;
export async function startCluster<R extends RedisUnderTest>(
  startRedis: () => Promise<R>,
): Promise<Cluster<R>>;
export async function startCluster(
  startRedis: () => Promise<RedisUnderTest> = startSingleRedis,
): Promise<Cluster<RedisUnderTest>> {
  const dir = await mkdtemp(join(tmpdir(), 'reliability-'));
  const redis = await startRedis();
  const prefix = `rel-${randomUUID().slice(0, 8)}`;
  const keys = keyPrefix(prefix, redis.url);
  const client = redis.connect();
  const handlerRuns = new Queue(runQueueName(PROBE_HANDLER_NAME), {
    connection: client,
    prefix: keys,
  });
  const deliveries = new Queue(DELIVERIES_QUEUE, { connection: client, prefix: keys });
  for (const queue of [handlerRuns, deliveries]) queue.on('error', () => {});
  const runQueues = createRunQueues(client, keys);
  const effectsLog = join(dir, 'effects.log');
  const runsLog = join(dir, 'runs.log');
  const processes: CliProcess[] = [];
  const lines = (file: string) =>
    existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

  const base = { REDIS_URL: redis.url, QUEUE_PREFIX: prefix };
  return {
    dir,
    redis,
    prefix,
    client,
    handlerRuns,
    runQueues,
    deliveries,
    quarantine: createQuarantine({ connection: client, prefix: keys }),
    effectsLog,
    runsLog,

    async serve(env = {}) {
      const { cli, url } = await startServe({ ...base, WEBHOOK_SECRET: SECRET, ...env });
      processes.push(cli);
      return { cli, base: url, url: `${url}/webhooks/feedback` };
    },

    async work(env = {}) {
      const cli = runCli(['work'], {
        ...base,
        HANDLERS: PROBE_HANDLER,
        EFFECTS_LOG: effectsLog,
        RUNS_LOG: runsLog,
        SHUTDOWN_TIMEOUT_SECONDS: '5',
        ...env,
      });
      processes.push(cli);
      const started = () => cli.output().includes('"msg":"worker started"');
      await vi.waitFor(
        () => expect(started() || cli.child.exitCode !== null, 'a worker to start').toBeTruthy(),
        { timeout: 15_000 },
      );
      if (cli.child.exitCode !== null) throw new Error(`work exited:\n${cli.output()}`);
      return cli;
    },

    async stop(cli, signal = 'SIGTERM') {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill(signal);
      return cli.exited();
    },

    effects: () => lines(effectsLog),
    runs: () =>
      lines(runsLog).map((line) => {
        const [pid, key] = line.split(' ');
        return { pid: Number(pid), key: key! };
      }),
    output: () => processes.map((cli) => cli.output()).join('\n'),

    async close() {
      for (const cli of processes) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await Promise.all(processes.map((cli) => cli.exited()));
      await Promise.all([handlerRuns.close(), runQueues.close(), deliveries.close()]);
      client.disconnect();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
