/**
 * A small HTTP server of its own for /healthz, /readyz and /metrics on METRICS_PORT: the
 * worker's, and the receiver's when METRICS_PORT is set for it.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { answerClientErrors } from './client-error.js';
import { createProbeRouter, type ProbeDeps } from './probes.js';
import { sendNotFound } from './send-problem.js';

export async function startProbeServer(
  options: ProbeDeps & { port: number; host?: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  app.use(createProbeRouter(options));
  app.use(sendNotFound);
  const server = createServer(app);
  answerClientErrors(server);
  server.listen(options.port, options.host ?? '0.0.0.0');
  await once(server, 'listening');
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
