/**
 * A private redis-server for tests, on a free port, keeping nothing on disk unless asked. Tests
 * never touch the machine's shared Redis on 6379.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM, waits for exit). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its socket but answers nothing. */
  pause(): void;
  resume(): void;
}

export interface RedisServerOptions {
  /** Keep an append-only file in a temporary directory, so a restart keeps the data. */
  readonly appendOnly?: boolean;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    options.appendOnly ? 'yes' : 'no',
    '--maxmemory-policy',
    'noeviction',
  ];
  let child: ChildProcess | undefined;

  const start = async () => {
    const spawned = spawn('redis-server', args, { stdio: 'ignore' });
    child = spawned;
    const failed = new Promise<never>((_, reject) => {
      spawned.once('error', (error) =>
        reject(
          new Error(`cannot start redis-server (${error.message}); install Debian's redis-server`),
        ),
      );
    });
    const probe = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => {});
    try {
      await Promise.race([
        failed,
        waitFor(
          () =>
            probe
              .connect()
              .then(() => probe.ping())
              .then(
                () => true,
                () => false,
              ),
          {
            timeoutMs: 10_000,
            what: `redis-server on port ${port}`,
          },
        ),
      ]);
    } finally {
      probe.disconnect();
    }
  };

  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGCONT');
    running.kill('SIGTERM');
    await exited;
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await stop();
      await start();
    },
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
  };
}
