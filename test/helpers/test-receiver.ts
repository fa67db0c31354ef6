/**
 * Builds the receiver's app from its real parts (producer connection, BullMQ queue, quarantine)
 * against the test run's Redis, under a key prefix of its own, and captures every log line.
 */
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import { expect, inject, vi } from 'vitest';
import type { InvalidPayloadMode } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import {
  createDeliveryQueue,
  type DeliveryQueue,
  type DeliveryQueueProducer,
  type JobRetention,
} from '../../src/queue/deliveries-queue.js';
import {
  createQuarantine,
  type Quarantine,
  type QuarantineBounds,
} from '../../src/queue/quarantine.js';
import {
  createProducerConnection,
  redisAnswers,
  type RedisConnection,
} from '../../src/queue/redis.js';
import { createReplicatedWrites, type ReplicaAcks } from '../../src/queue/replicated-writes.js';
import {
  createSignatureScheme,
  type SignatureSchemeName,
} from '../../src/webhooks/signature-scheme.js';

export const TEST_SECRET = 'test-secret-0f9c2d7e';
/** The admin token the test receiver serves /metrics to. */
export const TEST_METRICS_TOKEN = 'test-metrics-token-5b1e9a';

export interface TestReceiverOptions {
  redisUrl?: string;
  scheme?: SignatureSchemeName;
  secrets?: string[];
  invalidPayload?: InvalidPayloadMode;
  bodyLimitBytes?: number;
  dedupeTtlSeconds?: number;
  retention?: JobRetention;
  now?: () => number;
  /** Replicas to wait for before answering (ACK_REPLICAS). Default: none. */
  acks?: ReplicaAcks;
  /** What the quarantine keeps at most. Default: QUARANTINE_DEFAULTS. */
  quarantineBounds?: QuarantineBounds;
  /** Puts something between the route and the real queue, to inject a failure. */
  wrapQueue?: (queue: DeliveryQueue) => DeliveryQueue;
}

export interface TestReceiver {
  readonly app: Express;
  readonly prefix: string;
  readonly connection: RedisConnection;
  readonly deliveries: DeliveryQueueProducer;
  readonly quarantine: Quarantine;
  readonly metrics: Metrics;
  /** Every log line written so far, parsed. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function createTestReceiver(options: TestReceiverOptions = {}): Promise<TestReceiver> {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void logs.push(JSON.parse(line)) },
  });
  const connection = createProducerConnection(options.redisUrl ?? inject('redisUrl'), logger);
  const writes = createReplicatedWrites({
    connection,
    key: prefix,
    ...(options.acks ? { acks: options.acks } : {}),
  });
  const deliveries = createDeliveryQueue({
    connection,
    writes,
    prefix,
    dedupeTtlSeconds: options.dedupeTtlSeconds ?? 3600,
    ...(options.retention ? { retention: options.retention } : {}),
  });
  deliveries.queue.on('error', () => {});
  await vi.waitFor(() => expect(connection.status, 'redis connection').toBe('ready'), {
    timeout: 5_000,
  });
  await deliveries.queue.waitUntilReady();
  const quarantine = createQuarantine({
    connection,
    prefix,
    writes,
    ...(options.quarantineBounds ? { bounds: options.quarantineBounds } : {}),
  });
  const metrics = createMetrics();
  metrics.watchQueues(async () => [deliveries.queue]);
  const app = createApp({
    metrics,
    metricsToken: TEST_METRICS_TOKEN,
    scheme: createSignatureScheme({
      scheme: options.scheme ?? 'hmac-sha256',
      secrets: options.secrets ?? [TEST_SECRET],
      signatureHeader: 'X-Ybug-Signature',
      toleranceSeconds: 300,
    }),
    bodyLimitBytes: options.bodyLimitBytes ?? 1024 * 1024,
    invalidPayload: options.invalidPayload ?? 'quarantine',
    deliveries: options.wrapQueue ? options.wrapQueue(deliveries) : deliveries,
    quarantine,
    logger,
    isReady: () => redisAnswers(connection),
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    app,
    prefix,
    connection,
    deliveries,
    quarantine,
    metrics,
    logs,
    close: async () => {
      await deliveries.close().catch(() => {});
      connection.disconnect();
    },
  };
}
