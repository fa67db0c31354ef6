/**
 * End-to-end latency: from a delivery's POST leaving the sender to the start of its handler, at
 * fixed offered loads (open loop), through the processes a deployment runs: `feedback-receiver
 * serve` and `feedback-receiver work`, each a process of its own, the worker with one handler
 * module (latency-handler.mjs) that pushes each delivery's latency onto a Redis list this bench
 * reads. The handler reads the `sent_at` the sender put in the record; both clocks are this
 * machine's.
 *
 * Both services run on the server's core, and Redis and the load generator on the other: the
 * services under test on one core and what they talk to on the other, as on one small host that
 * runs both (Docker Compose, `npm start`) with Redis and the senders elsewhere, and so that the
 * worker does not take Redis's core from the receiver's writes. On a machine busy with other work
 * the worker read lower beside Redis (what-we-tried.md, "The end-to-end tail"): the placement was
 * chosen for what it models, not for its figure.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { freePort } from '../src/cli/free-port.js';
import type { OpenLoopResult, OpenLoopSettings } from './open-loop-client.js';
import type { Pinning } from './pinning.js';
import {
  CLI,
  here,
  runJsonProcess,
  startReceiverUnderTest,
  startServer,
  untilReady,
} from './processes.js';
import { percentile } from './stats.js';

export interface LatencyBenchOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly pinning: Pinning;
  /** Offered loads, deliveries per second. */
  readonly rates: readonly number[];
  readonly seconds: number;
}

export interface LatencyRow {
  readonly perSecond: number;
  readonly sent: number;
  readonly handled: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const SECRET = 'bench-latency-secret-0123456789';
const PREFIX = 'bench-latency';
const OPEN_LOOP = here('./open-loop-client.js');
const HANDLER = here('../../bench/latency-handler.mjs');
const LIST = 'bench-latency:handler-starts';
const DEADLINE_MS = 60_000;
/**
 * The round not counted, at the first offered load. A process's first deliveries pay for its
 * start (code compiled on first use, connections and scripts loaded, the heap grown to its working
 * size): on a quiet machine, the slowest deliveries of a fresh start all came within its first
 * 130 ms (what-we-tried.md). 5 s (500 deliveries at 100/s) is well past that, and so that what is
 * counted is what a running service does, no longer: the periodic work of a running worker (the
 * roster every 5 s, the stalled-job check every 30 s, the history's batches) falls in the counted
 * rounds, as it does in production.
 */
const WARM_UP_SECONDS = 5;

export async function benchLatency(options: LatencyBenchOptions): Promise<LatencyRow[]> {
  const port = await freePort();
  const receiver = await startReceiverUnderTest(options.pinning, port, {
    secret: SECRET,
    redisUrl: options.redisUrl,
    prefix: PREFIX,
  });
  const metricsPort = await freePort();
  const worker = await startServer(options.pinning, [CLI, 'work'], metricsPort, {
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: PREFIX,
    HANDLERS: HANDLER,
    LATENCY_LIST: LIST,
    WORKER_CONCURRENCY: '50',
    METRICS_PORT: String(metricsPort),
    NODE_ENV: 'production',
  }).catch(async (error: unknown) => {
    await receiver.stop();
    throw error;
  });
  /** Offers `perSecond` for `seconds`, then waits for every accepted delivery's handler. */
  const measure = async (perSecond: number, seconds: number): Promise<LatencyRow> => {
    await options.redis.del(LIST);
    const settings: OpenLoopSettings = {
      url: `${receiver.url}/webhooks/feedback`,
      perSecond,
      seconds,
      secret: SECRET,
      runId: randomUUID().slice(0, 8),
    };
    const sent = await runJsonProcess<OpenLoopResult>(options.pinning, OPEN_LOOP, settings);
    const deadline = Date.now() + DEADLINE_MS;
    while ((await options.redis.llen(LIST)) < sent.ok && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const latencies = (await options.redis.lrange(LIST, 0, -1)).map(Number);
    return {
      perSecond,
      sent: sent.sent,
      handled: latencies.length,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  };
  try {
    await untilReady(`http://127.0.0.1:${metricsPort}/readyz`);
    const warm = await measure(options.rates[0]!, WARM_UP_SECONDS);
    process.stderr.write(`latency   warm-up (not counted): p99 ${warm.p99Ms} ms\n`);
    const rows: LatencyRow[] = [];
    for (const perSecond of options.rates) {
      const row = await measure(perSecond, options.seconds);
      process.stderr.write(
        `latency   ${perSecond}/s: ${row.handled} of ${row.sent} handled, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms\n`,
      );
      rows.push(row);
    }
    return rows;
  } finally {
    await worker.stop();
    await receiver.stop();
  }
}
