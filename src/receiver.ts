/**
 * Wires a running receiver from a configuration: the producer connection, the deliveries queue,
 * the quarantine, the app and the HTTP server. `feedback-receiver serve` is this and a signal
 * handler; tests start it on port 0.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { createApp } from './http/app.js';
import type { Logger } from './logger.js';
import { createDeliveryQueue } from './queue/deliveries-queue.js';
import { createQuarantine } from './queue/quarantine.js';
import { createProducerConnection, redisAnswers } from './queue/redis.js';
import { createSignatureScheme } from './webhooks/signature-scheme.js';

export interface RunningReceiver {
  readonly server: Server;
  /** Where it listens, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, then closes Redis. */
  close(): Promise<void>;
}

export async function startReceiver(config: Config, logger: Logger): Promise<RunningReceiver> {
  const connection = createProducerConnection(config.redisUrl, logger);
  const deliveries = createDeliveryQueue({
    connection,
    prefix: config.queuePrefix,
    dedupeTtlSeconds: config.webhook.dedupeTtlSeconds,
  });
  // The queue shares the producer connection, whose state is already logged once per outage.
  deliveries.queue.on('error', (error: Error) => {
    logger.debug({ error: error.message }, 'deliveries queue error');
  });
  const quarantine = createQuarantine({ connection, prefix: config.queuePrefix });

  const app = createApp({
    scheme: createSignatureScheme({
      scheme: config.webhook.scheme,
      secrets: config.webhook.secrets,
      signatureHeader: config.webhook.signatureHeader,
      toleranceSeconds: config.webhook.toleranceSeconds,
    }),
    bodyLimitBytes: config.webhook.bodyLimitBytes,
    invalidPayload: config.webhook.invalidPayload,
    deliveries,
    quarantine,
    logger,
    isReady: () => redisAnswers(connection),
  });

  const server = createServer(app);
  // Bounded waits for slow or stalled clients, so they cannot hold connections open for long.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  const url = `http://${host}:${port}`;
  logger.info(
    { url, scheme: config.webhook.scheme, secretCount: config.webhook.secrets.length },
    'receiver listening',
  );

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drained;
      await deliveries.close();
      await connection.quit().catch(() => connection.disconnect());
    })();
    return closing;
  };
  return { server, url, close };
}
