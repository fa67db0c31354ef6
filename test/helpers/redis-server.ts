/**
 * A private redis-server for tests, on a free port, keeping nothing on disk unless asked. Tests
 * never touch the machine's shared Redis on 6379. Built on the CLI's own embedded Redis.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/cli/embedded-redis.js';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server for good and removes its directory. */
  stop(): Promise<void>;
  /** Stops it and starts it again on the same port and data directory. */
  restart(): Promise<void>;
  /** Stops it (SIGTERM: it writes its append-only file) and keeps its port and data directory. */
  shutdown(): Promise<void>;
  /** Starts it again after shutdown(), on the same port and data directory. */
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its socket but answers nothing. */
  pause(): void;
  resume(): void;
}

export interface RedisServerOptions {
  /** Keep an append-only file, so a restart keeps the data. */
  readonly appendOnly?: boolean;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-redis-'));
  const appendOnly = options.appendOnly ?? false;
  let server: EmbeddedRedis = await startEmbeddedRedis({ dir, appendOnly });
  const { port, url } = server;
  return {
    url,
    port,
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await server.stop();
      server = await startEmbeddedRedis({ dir, appendOnly, port });
    },
    shutdown: () => server.stop(),
    start: async () => {
      server = await startEmbeddedRedis({ dir, appendOnly, port });
    },
    pause: () => void server.process.kill('SIGSTOP'),
    resume: () => void server.process.kill('SIGCONT'),
  };
}
