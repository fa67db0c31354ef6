/**
 * A private redis-server for `start` (with a data directory and the append-only file on, so a
 * restart keeps the queue) and for the demo (in a temporary directory).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

export interface EmbeddedRedis {
  readonly url: string;
  readonly port: number;
  /** The redis-server process, for tests that pause it. */
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

export class RedisNotFoundError extends Error {
  override readonly name = 'RedisNotFoundError';
  constructor() {
    super(
      'REDIS_URL is not set and redis-server is not on the PATH: install Redis (Debian and Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL',
    );
  }
}

/**
 * @throws {RedisNotFoundError} when redis-server is not on the PATH.
 * @throws {Error} when it does not answer within 10 seconds.
 */
export async function startEmbeddedRedis({
  dir,
  appendOnly,
  port: wanted,
}: {
  dir: string;
  appendOnly: boolean;
  /** Default: a free port. */
  port?: number;
}): Promise<EmbeddedRedis> {
  mkdirSync(dir, { recursive: true });
  const port = wanted ?? (await freePort());
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      appendOnly ? 'yes' : 'no',
      // With the append-only file, sync every write: an acknowledged delivery survives a crash.
      '--appendfsync',
      'always',
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: 'ignore' },
  );
  const failed = once(child, 'error').then(([error]) => {
    throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? new RedisNotFoundError() : error;
  });
  const exited = once(child, 'exit');
  await Promise.race([failed, waitForPing(port)]);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGCONT'); // a paused server could not act on SIGTERM
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitForPing(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer within 10 seconds`);
    await sleep(50);
  }
}
