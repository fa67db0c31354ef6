/**
 * A worker runtime (and a producer to feed it) against the test run's Redis, under a key prefix
 * of its own, with its log lines captured.
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { expect, inject, onTestFinished, vi } from 'vitest';
import { createApiClient, type ApiClient } from '../../src/api/client.js';
import { createHistorySearch } from '../../src/history/history-search.js';
import { createLogger } from '../../src/logger.js';
import {
  createDeliveryQueue,
  type DeliveryQueueProducer,
  type JobRetention,
} from '../../src/queue/deliveries-queue.js';
import { createQuarantine, type Quarantine } from '../../src/queue/quarantine.js';
import { createDeadLetter, type DeadLetter } from '../../src/runs/dead-letter.js';
import {
  createProducerConnection,
  createWorkerConnection,
  type RedisConnection,
} from '../../src/queue/redis.js';
import type { ReplicaAcks } from '../../src/queue/replicated-writes.js';
import type { RunQueues } from '../../src/runs/run-queues.js';
import type { Delivery } from '../../src/webhooks/delivery.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import type { Handler } from '../../src/worker/handler.js';
import {
  startWorkerRuntime,
  type SimilarSettings,
  type WorkerRuntime,
} from '../../src/worker/runtime.js';
import { countCompletedRuns, countRuns } from './completed-runs.js';

export interface TestWorkerEnv {
  readonly prefix: string;
  readonly logs: Record<string, unknown>[];
  /**
   * Resolves with the first line logged from now on that `matches`, as it is written: the code
   * that wrote it has not reached its next await yet.
   */
  logged(matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Puts a feedback.created delivery for `record` in the deliveries queue, as the receiver does. */
  deliver(record: FeedbackRecord): Promise<Delivery>;
  /** Starts a worker runtime; several may run at once, as separate workers would. */
  startWorker(options: {
    handlers: Handler[];
    api?: ApiClient;
    concurrency?: number;
    lockDurationMs?: number;
    /** Another URL of the same Redis: to connect as a user of its own (an ACL user, say). */
    redisUrl?: string;
    /** ACK_REPLICAS of the worker. The test Redis has no replica: every success stays held. */
    ackReplicas?: ReplicaAcks;
    /** Grouping similar feedback (SIMILAR=on with these settings); off when not given. */
    similar?: SimilarSettings;
    /** How often the worker writes its handlers to the roster again. Default: the runtime's. */
    announceEveryMs?: number;
    /** Retention of the runs it adds and trims. Default: the runtime's. */
    retention?: JobRetention;
    /** Retention by which it trims the deliveries. Default: the runtime's. */
    deliveryRetention?: JobRetention;
    /** DEDUPE_TTL_SECONDS of this worker alone (the trim's grace). Default: the env's. */
    dedupeTtlSeconds?: number;
    /** How often it trims the handlers' queues by age. Default: the runtime's. */
    trimEveryMs?: number;
  }): Promise<WorkerRuntime>;
  /** Resolves once `count` handler runs have completed (and fails at the deadline). */
  completedRuns(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves once `count` handler runs have failed for good. */
  failedRuns(count: number, timeoutMs?: number): Promise<void>;
  /**
   * Resolves once the delivery history holds `count` deliveries and no run of theirs is under
   * way: the history is written in batches, a moment after routings and runs finish.
   */
  historyHolds(count: number, timeoutMs?: number): Promise<void>;
  /** The dead letter of the worker's queues. */
  deadLetter(): DeadLetter;
  readonly deliveries: Queue<Delivery>;
  /** Puts deliveries in the queue as the receiver does (quarantine replays use it). */
  readonly producer: DeliveryQueueProducer;
  /** The quarantine under the same prefix. */
  readonly quarantine: Quarantine;
  /** The producer's connection, for reads of the test's own. */
  readonly connection: RedisConnection;
  /** Each started worker's connection, in the order they started: to watch its reconnects. */
  readonly workerConnections: readonly RedisConnection[];
  /** DEDUPE_TTL_SECONDS of the producer and of every worker: how long the history keeps. */
  readonly dedupeTtlSeconds: number;
  close(): Promise<void>;
}

export interface TestWorkerEnvOptions {
  /** DEDUPE_TTL_SECONDS of the producer and of every worker. Default: 3600. */
  readonly dedupeTtlSeconds?: number;
  /** Another Redis than the test run's (one with a replica, say). */
  readonly redisUrl?: string;
}

/** A worker env for the running test, closed when the test finishes. */
export async function startTestWorkerEnv(options?: TestWorkerEnvOptions): Promise<TestWorkerEnv> {
  const env = await createTestWorkerEnv(options);
  onTestFinished(() => env.close());
  return env;
}

export async function createTestWorkerEnv({
  dedupeTtlSeconds = 3600,
  redisUrl = inject('redisUrl'),
}: TestWorkerEnvOptions = {}): Promise<TestWorkerEnv> {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const logs: Record<string, unknown>[] = [];
  const watches = new Set<(line: Record<string, unknown>) => void>();
  const logger = createLogger({
    level: 'debug',
    destination: {
      write: (text: string) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        logs.push(line);
        for (const watch of watches) watch(line);
      },
    },
  });
  const producerConnection = createProducerConnection(redisUrl, logger);
  const producer = createDeliveryQueue({
    connection: producerConnection,
    prefix,
    dedupeTtlSeconds,
  });
  await vi.waitFor(() => expect(producerConnection.status, 'redis').toBe('ready'), {
    timeout: 5_000,
  });
  await producer.queue.waitUntilReady();
  // The connection logs an outage; without a listener BullMQ prints each of its errors to stderr.
  producer.queue.on('error', () => {});

  const runtimes: WorkerRuntime[] = [];
  const workerConnections: RedisConnection[] = [];
  const unlimitedApi = createApiClient({ baseUrl: undefined, token: undefined });
  let runQueues: RunQueues | undefined;

  const env: TestWorkerEnv = {
    prefix,
    logs,
    logged: (matches) =>
      new Promise((resolve) => {
        const watch = (line: Record<string, unknown>) => {
          if (!matches(line)) return;
          watches.delete(watch);
          resolve(line);
        };
        watches.add(watch);
      }),
    deliveries: producer.queue,
    producer,
    quarantine: createQuarantine({ connection: producerConnection, prefix }),
    connection: producerConnection,
    workerConnections,
    dedupeTtlSeconds,
    async historyHolds(count, timeoutMs = 10_000) {
      const history = createHistorySearch({
        connection: producerConnection,
        prefix,
        ttlSeconds: dedupeTtlSeconds,
      });
      await vi.waitFor(
        async () => {
          expect(await history.size(), 'deliveries in the history').toBe(count);
          const running = await history.search({ state: 'running', offset: 0, limit: 1 });
          expect(running.total, 'deliveries with runs under way').toBe(0);
        },
        { timeout: timeoutMs, interval: 20 },
      );
    },
    async deliver(record) {
      const delivery: Delivery = {
        key: `feedback.created:${record.id}`,
        event: 'feedback.created',
        receivedAt: new Date().toISOString(),
        record,
      };
      await producer.enqueue(delivery);
      return delivery;
    },
    async startWorker({
      handlers,
      api = unlimitedApi,
      concurrency = 5,
      lockDurationMs,
      redisUrl: url = redisUrl,
      ackReplicas,
      similar,
      announceEveryMs,
      retention,
      deliveryRetention,
      trimEveryMs,
      dedupeTtlSeconds: ownDedupeTtlSeconds = dedupeTtlSeconds,
    }) {
      const connection = createWorkerConnection(url, logger);
      workerConnections.push(connection);
      const runtime = await startWorkerRuntime({
        connection,
        prefix,
        handlers,
        api,
        logger,
        concurrency,
        dedupeTtlSeconds: ownDedupeTtlSeconds,
        ...(lockDurationMs ? { lockDurationMs } : {}),
        ...(ackReplicas ? { ackReplicas } : {}),
        ...(similar ? { similar } : {}),
        ...(announceEveryMs ? { announceEveryMs } : {}),
        ...(retention ? { retention } : {}),
        ...(deliveryRetention ? { deliveryRetention } : {}),
        ...(trimEveryMs ? { trimEveryMs } : {}),
      });
      runtimes.push(runtime);
      runQueues ??= runtime.runQueues;
      return runtime;
    },
    async completedRuns(count, timeoutMs = 10_000) {
      await vi.waitFor(
        async () =>
          expect(
            await countCompletedRuns(runQueues),
            'completed handler runs',
          ).toBeGreaterThanOrEqual(count),
        { timeout: timeoutMs },
      );
    },
    deadLetter() {
      if (!runQueues) throw new Error('start a worker first');
      return createDeadLetter({ runQueues, deliveries: producer.queue });
    },
    async failedRuns(count, timeoutMs = 10_000) {
      await vi.waitFor(
        async () =>
          expect(
            await countRuns(runQueues, 'failed'),
            'failed handler runs',
          ).toBeGreaterThanOrEqual(count),
        { timeout: timeoutMs },
      );
    },
    async close() {
      await Promise.all(runtimes.map((runtime) => runtime.close(1_000)));
      await producer.close();
      for (const connection of [producerConnection, ...workerConnections]) connection.disconnect();
    },
  };
  return env;
}
