/**
 * Wires a receiver from a configuration: the producer connection, the deliveries queue, the
 * quarantine, the app and the HTTP server. `feedback-receiver serve` is `startReceiver` and a
 * signal handler; people embedding the route in their own app use `createReceiverDeps`.
 */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openAdminConsole, openConsoleQueues } from './admin-console.js';
import type { ReceiverConfig } from './config.js';
import { createApp, type AppDeps } from './http/app.js';
import { answerClientErrors } from './http/client-error.js';
import { startProbeServer } from './http/probe-server.js';
import type { Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { DeliveryQueueProducer } from './queue/deliveries-queue.js';
import { createDeliveryStats } from './queue/delivery-stats.js';
import { createQuarantine, type Quarantine } from './queue/quarantine.js';
import { openProducerQueues } from './queue/producer-queues.js';
import { redisAnswers, waitForRedis, type RedisConnection } from './queue/redis.js';
import { createSignatureScheme } from './webhooks/signature-scheme.js';

export interface ReceiverDeps extends AppDeps {
  readonly connection: RedisConnection;
  readonly deliveries: DeliveryQueueProducer;
  readonly quarantine: Quarantine;
  readonly metrics: Metrics;
  /** From now on /readyz answers 503, so load balancers stop sending deliveries here. */
  drain(): void;
  /** Closes the queues and the Redis connection. */
  close(): Promise<void>;
}

/**
 * Everything the webhook route and the app need, built from a configuration.
 *
 * @example
 * const deps = createReceiverDeps(loadReceiverConfig(), createLogger({ level: 'info' }));
 * myApp.use(createWebhookRouter(deps)); // before express.json()
 */
export function createReceiverDeps(config: ReceiverConfig, logger: Logger): ReceiverDeps {
  const queues = openProducerQueues(config, logger, config.ackReplicas);
  const { connection, writes, deliveries } = queues;
  const metrics = createMetrics();
  const quarantine = createQuarantine({
    connection,
    prefix: config.queuePrefix,
    writes,
    bounds: {
      maxEntries: config.quarantine.maxEntries,
      maxAgeMs: config.quarantine.maxAgeDays * 86_400_000,
      maxBytes: config.quarantine.maxBytes,
    },
  });
  const stats = createDeliveryStats({ connection, prefix: config.queuePrefix, logger });
  const adminConsole = config.adminToken
    ? openAdminConsole(config, config.adminToken, deliveries, logger)
    : undefined;
  // Queue depths are read on the console's connection, never on the producer's, which the
  // senders' deliveries wait on; without a console, on one opened for them when served.
  const countReads =
    adminConsole ??
    (config.metricsPort !== undefined ? openConsoleQueues(config, logger) : undefined);
  if (countReads) metrics.watchQueues(countReads.queues);
  let draining = false;
  return {
    scheme: createSignatureScheme(config.webhook),
    bodyLimitBytes: config.webhook.bodyLimitBytes,
    invalidPayload: config.webhook.invalidPayload,
    connection,
    deliveries,
    quarantine,
    logger,
    metrics,
    stats,
    admin: adminConsole?.admin,
    // On METRICS_PORT when set (served by startReceiver), else behind the admin token.
    metricsToken: config.metricsPort === undefined ? config.adminToken : undefined,
    isReady: async () => !draining && (await redisAnswers(connection)),
    drain: () => {
      draining = true;
    },
    close: async () => {
      await stats.close();
      await countReads?.close();
      await queues.close();
    },
  };
}

export interface RunningReceiver {
  readonly server: Server;
  /** Where it listens, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** Turns /readyz to 503, stops accepting, lets in-flight requests finish, then closes Redis. */
  close(): Promise<void>;
}

export async function startReceiver(
  config: ReceiverConfig,
  logger: Logger,
): Promise<RunningReceiver> {
  const deps = createReceiverDeps(config, logger);
  // A REDIS_URL that is wrong or unreachable stops the process now, not at the first delivery.
  await waitForRedis(deps.connection, config.redisUrl).catch(async (error: unknown) => {
    await deps.close();
    throw error;
  });
  // Once shutting down, each answer closes its connection: a sender that keeps its connection
  // busy would otherwise go on being served on it (the drain never ends), or have its next
  // request reset when the connection is closed at last, unanswered.
  let closing: Promise<void> | undefined;
  const unanswered = new Set<ServerResponse>();
  const app = createApp(deps);
  const server = createServer((req, res) => {
    if (closing) res.setHeader('Connection', 'close');
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
    app(req, res);
  });
  // Bounded waits for slow or stalled clients, so they cannot hold connections open for long.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  answerClientErrors(server);
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  logger.info(
    { url, scheme: config.webhook.scheme, secretCount: config.webhook.secrets.length },
    'receiver listening',
  );
  const probes =
    config.metricsPort === undefined
      ? undefined
      : await startProbeServer({
          port: config.metricsPort,
          host: config.host,
          isReady: deps.isReady,
          metrics: deps.metrics,
        }).catch(async (error: unknown) => {
          server.close();
          await deps.close();
          throw error;
        });
  if (probes) {
    logger.info({ url: probes.url }, 'receiver probes listening (/healthz, /readyz, /metrics)');
  }

  const close = () => {
    closing ??= (async () => {
      deps.drain();
      for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close');
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drained;
      await probes?.close();
      await deps.close();
    })();
    return closing;
  };
  return { server, url, close };
}
