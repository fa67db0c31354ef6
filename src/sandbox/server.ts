/** Runs the sandbox on a port: `feedback-receiver sandbox`, the demo, and end-to-end tests. */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.js';
import { createSandboxApp, type SandboxRateLimit } from './app.js';
import { createDeliverer, type Deliverer } from './deliverer.js';
import { DEFAULT_SEED, type Seed } from './seed.js';
import { SandboxState } from './state.js';

export interface SandboxOptions {
  readonly port?: number;
  readonly host?: string;
  readonly seed?: Seed;
  readonly logger: Logger;
  readonly rateLimit?: SandboxRateLimit;
  /** Delivery retries; see DelivererOptions. */
  readonly deliveryAttempts?: number;
  readonly deliveryBackoffMs?: number;
}

export interface RunningSandbox {
  readonly url: string;
  readonly state: SandboxState;
  readonly deliverer: Deliverer;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions): Promise<RunningSandbox> {
  const state = new SandboxState(structuredClone(options.seed ?? DEFAULT_SEED));
  const deliverer = createDeliverer({
    logger: options.logger,
    ...(options.deliveryAttempts ? { attempts: options.deliveryAttempts } : {}),
    ...(options.deliveryBackoffMs ? { backoffMs: options.deliveryBackoffMs } : {}),
  });
  const app = createSandboxApp({
    state,
    deliverer,
    logger: options.logger,
    ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
  });
  const server = createServer(app);
  server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  return {
    url,
    state,
    deliverer,
    close: async () => {
      deliverer.stop();
      await deliverer.idle();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
