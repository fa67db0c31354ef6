/**
 * End-to-end latency: from a delivery's POST leaving the sender to the start of its handler, with
 * `feedback-receiver serve` on the server core and a worker taking the deliveries, at fixed offered
 * loads (open loop). The handler reads the `sent_at` the sender put in the record; both clocks are
 * this machine's.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { freePort } from '../src/cli/free-port.js';
import { loadWorkerConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startWorker } from '../src/worker-process.js';
import { defineHandler } from '../src/worker/handler.js';
import type { OpenLoopResult, OpenLoopSettings } from './open-loop-client.js';
import type { Pinning } from './pinning.js';
import { here, runJsonProcess, startReceiverUnderTest } from './processes.js';
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
const DEADLINE_MS = 60_000;
const WARM_UP_SECONDS = 2;

export async function benchLatency(options: LatencyBenchOptions): Promise<LatencyRow[]> {
  const port = await freePort();
  const receiver = await startReceiverUnderTest(options.pinning, port, {
    secret: SECRET,
    redisUrl: options.redisUrl,
    prefix: PREFIX,
  });
  const latencies: number[] = [];
  const worker = await startWorker(
    loadWorkerConfig({
      REDIS_URL: options.redisUrl,
      QUEUE_PREFIX: PREFIX,
      WORKER_CONCURRENCY: '50',
      METRICS_PORT: '0',
    }),
    createLogger({ level: 'info', destination: pino.destination('/dev/null') }),
    {
      handlers: [
        defineHandler({
          name: 'latency-probe',
          handle: ({ record }) => void latencies.push(Date.now() - Number(record.sent_at)),
        }),
      ],
    },
  );
  /** Offers `perSecond` for `seconds`, then waits for every accepted delivery's handler. */
  const measure = async (perSecond: number, seconds: number): Promise<LatencyRow> => {
    latencies.length = 0;
    const settings: OpenLoopSettings = {
      url: `${receiver.url}/webhooks/feedback`,
      perSecond,
      seconds,
      secret: SECRET,
      runId: randomUUID().slice(0, 8),
    };
    const sent = await runJsonProcess<OpenLoopResult>(options.pinning, OPEN_LOOP, settings);
    const deadline = Date.now() + DEADLINE_MS;
    while (latencies.length < sent.ok && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return {
      perSecond,
      sent: sent.sent,
      handled: latencies.length,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  };
  try {
    // A round not counted: the first deliveries pay for the processes' start (code compiled on
    // first use, connections and scripts loaded), which says nothing of a running service.
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
    await worker.close();
    await receiver.stop();
  }
}
