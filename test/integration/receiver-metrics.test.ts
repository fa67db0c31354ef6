/**
 * The receiver's /metrics: never public on the webhook port, on METRICS_PORT when set, and its
 * queue depths read at most once per few seconds on the console's connection, not the producer's.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { DELIVERIES_QUEUE } from '../../src/queue/deliveries-queue.js';
import { createReceiverDeps, startReceiver } from '../../src/receiver.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';

const ADMIN_TOKEN = 'metrics-admin-token-7c2f41';
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

function receiverConfig(env: Record<string, string> = {}) {
  return loadReceiverConfig({
    WEBHOOK_SECRET: 'metrics-test-secret',
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `metrics-${Math.random().toString(36).slice(2, 8)}`,
    ...env,
  });
}

/**
 * Every count read (BullMQ's getCounts script) of `prefix`'s deliveries queue, with its client's
 * address, seen through MONITOR on a plain socket (one line per command Redis runs).
 */
async function watchCountReads(prefix: string) {
  const { port } = new URL(redis.url);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  socket.write('MONITOR\r\n');
  const reads: string[] = [];
  const echoed = new Set<string>();
  const countKey = `"${prefix}:${DELIVERIES_QUEUE}:"`;
  let rest = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\r\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const match = /^\+\S+ \[\d+ ([^\]]+)\] "(\w+)" (.*)$/.exec(line);
      if (!match) continue;
      const [, source = '', command = '', args = ''] = match;
      if (command.toLowerCase() === 'echo') echoed.add(args);
      const script = command.toLowerCase() === 'evalsha' || command.toLowerCase() === 'eval';
      if (script && args.includes(countKey) && args.includes('"failed"')) reads.push(source);
    }
  });
  return {
    reads,
    /** Waits until the monitor has seen every command Redis ran before now. */
    settled: async () => {
      const marker = `settled-${Math.random()}`;
      const client = new Redis(redis.url);
      try {
        await client.echo(marker);
        await vi.waitFor(() => expect(echoed.has(`"${marker}"`)).toBe(true), { timeout: 5_000 });
      } finally {
        client.disconnect();
      }
    },
    /** The connection name of each client by its address, from CLIENT LIST. */
    names: async () => {
      const client = new Redis(redis.url);
      try {
        const list = (await client.client('LIST')) as string;
        return new Map(
          list
            .trim()
            .split('\n')
            .map((line) => [/addr=(\S+)/.exec(line)?.[1], /name=(\S*)/.exec(line)?.[1]]),
        );
      } finally {
        client.disconnect();
      }
    },
    close: () => socket.destroy(),
  };
}

/** Loads BullMQ's getCounts script into Redis, so each later read is one EVALSHA. */
async function loadCountScript(prefix: string): Promise<void> {
  const queue = new Queue(DELIVERIES_QUEUE, { connection: { url: redis.url }, prefix });
  await queue.getJobCounts('failed');
  await queue.close();
}

describe("the receiver's /metrics on the webhook port", () => {
  it('is refused without the admin token and served with it', async () => {
    const deps = createReceiverDeps(
      receiverConfig({ ADMIN_TOKEN }),
      createLogger({ level: 'silent' }),
    );
    try {
      const app = createApp(deps);
      await request(app).get('/metrics').expect(401);
      await request(app).get('/metrics').auth('not-the-token', { type: 'bearer' }).expect(401);
      // The console's connection may still be connecting at the first scrape.
      await vi.waitFor(async () => {
        const { text } = await request(app)
          .get('/metrics')
          .auth(ADMIN_TOKEN, { type: 'bearer' })
          .expect(200);
        expect(text).toContain(
          'feedback_receiver_queue_jobs{queue="deliveries",state="waiting"} 0',
        );
      });
    } finally {
      await deps.close();
    }
  });

  it('answers OPTIONS with its methods, as /healthz and /readyz do', async () => {
    const deps = createReceiverDeps(
      receiverConfig({ ADMIN_TOKEN }),
      createLogger({ level: 'silent' }),
    );
    try {
      const app = createApp(deps);
      const healthz = await request(app).options('/healthz').expect(200);
      const metrics = await request(app).options('/metrics').expect(200);
      expect(metrics.headers.allow).toBe(healthz.headers.allow);
    } finally {
      await deps.close();
    }
  });

  it('is not served without an admin token', async () => {
    const deps = createReceiverDeps(receiverConfig(), createLogger({ level: 'silent' }));
    try {
      await request(createApp(deps)).get('/metrics').expect(404);
    } finally {
      await deps.close();
    }
  });

  it('reads queue depths once for many scrapes, on the console connection', async () => {
    const config = receiverConfig({ ADMIN_TOKEN });
    await loadCountScript(config.queuePrefix);
    const deps = createReceiverDeps(config, createLogger({ level: 'silent' }));
    const watch = await watchCountReads(config.queuePrefix);
    try {
      const app = createApp(deps);
      const scrape = () =>
        request(app).get('/metrics').auth(ADMIN_TOKEN, { type: 'bearer' }).expect(200);
      // Until the console's connection is up, a scrape reads nothing (and says so); the first
      // read that reaches Redis then serves the scrapes below.
      await vi.waitFor(async () =>
        expect((await scrape()).text).toContain('feedback_receiver_queue_jobs_read 1'),
      );
      await Promise.all(Array.from({ length: 10 }, scrape));
      for (let i = 0; i < 3; i++) await scrape();
      await watch.settled();
      expect(watch.reads).toHaveLength(1);
      const names = await watch.names();
      expect(watch.reads.map((source) => names.get(source))).toEqual(['feedback-receiver:console']);
    } finally {
      watch.close();
      await deps.close();
    }
  });
});

describe('a scrape while Redis does not answer', () => {
  it('answers 200 with the process metrics and says the depths could not be read', async () => {
    const gone = await startRedisServer();
    const config = loadReceiverConfig({
      WEBHOOK_SECRET: 'metrics-test-secret',
      REDIS_URL: gone.url,
      ADMIN_TOKEN,
    });
    await gone.stop();
    const deps = createReceiverDeps(config, createLogger({ level: 'silent' }));
    try {
      const { text } = await request(createApp(deps))
        .get('/metrics')
        .auth(ADMIN_TOKEN, { type: 'bearer' })
        .expect(200);
      expect(text).toContain('feedback_receiver_queue_jobs_read 0');
      expect(text).not.toMatch(/^feedback_receiver_queue_jobs\{/m);
      expect(text).toMatch(/^feedback_receiver_process_cpu_seconds_total /m);
    } finally {
      await deps.close();
    }
  });
});

describe('METRICS_PORT on the receiver', () => {
  it('serves /metrics there without a token, and not on the webhook port', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const receiver = await startReceiver(
      { ...receiverConfig({ ADMIN_TOKEN, PORT: '0' }), host: '127.0.0.1', metricsPort: 0 },
      logger,
    );
    try {
      const probes = lines.find(
        (line) => line.msg === 'receiver probes listening (/healthz, /readyz, /metrics)',
      )?.url;
      expect(probes, 'the probe server is logged').toEqual(expect.any(String));
      const scraped = await fetch(`${String(probes)}/metrics`);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain('feedback_receiver_queue_jobs');
      const onWebhookPort = await fetch(`${receiver.url}/metrics`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(onWebhookPort.status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});

describe('queue depths in the metrics', () => {
  it('are read again once older than their maximum age', async () => {
    const prefix = `metrics-age-${Math.random().toString(36).slice(2, 8)}`;
    await loadCountScript(prefix);
    let now = 0;
    const metrics = createMetrics({ queueCountsMaxAgeMs: 5_000, now: () => now });
    const queue = new Queue(DELIVERIES_QUEUE, { connection: { url: redis.url }, prefix });
    metrics.watchQueues([queue]);
    const watch = await watchCountReads(prefix);
    try {
      await metrics.registry.metrics();
      now = 4_999;
      await metrics.registry.metrics();
      now = 5_000;
      await metrics.registry.metrics();
      await watch.settled();
      expect(watch.reads).toHaveLength(2);
    } finally {
      watch.close();
      await queue.close();
    }
  });
});
