/**
 * End-to-end latency: from a delivery's POST leaving the sender to the start of its handler, at
 * fixed offered loads (open loop), through the processes a deployment runs: `feedback-receiver
 * serve` and `feedback-receiver work`, each a process of its own, the worker with one handler
 * module (latency-handler.mjs) that pushes each delivery's latency onto a Redis list this bench
 * reads. The handler reads the `sent_at` the sender put in the record; both clocks are this
 * machine's.
 *
 * Both services run on the server's core, and Redis and the load generator on the other: the
 * services under test on one core, what they talk to on the other, as where Redis is a service of
 * its own and senders are elsewhere. (The worker beside Redis and the sender would measure the
 * worker fighting the sender for its core; at 1 000/s that core would hold the worker's ~0.5 ms a
 * delivery besides Redis's and the sender's work, and saturate first.)
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
 * start: code compiled on first use and then optimised as it runs hot, connections and scripts
 * loaded, the heap grown to its working size. Measured from a fresh start (what-we-tried.md,
 * "The end-to-end tail"), the p99 of each second settles within the first 2-3 s; the warm-up is
 * twice that, so that what is counted is what a service that has been running says, and no
 * longer, so that nothing slower that comes later (a GC, a timer) is left out.
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
