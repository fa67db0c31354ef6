/**
 * What tracing costs, at 100% sampling, measured against the same process with tracing off in
 * the same run. Spans go over OTLP/HTTP (protobuf) to a sink in this process that reads and
 * drops them; the batch processor is given room enough that none is dropped, so every span is
 * made, encoded and sent.
 *
 * - The receiver: `serve` with tracing and `serve` without, loaded at once (paired rounds, both
 *   on the server's core), with their CPU time per request.
 * - The worker: `work` with one no-op handler, with tracing and without, in alternating rounds,
 *   each draining the same number of queued deliveries; deliveries per second and CPU time per
 *   delivery.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { freePort } from '../src/cli/free-port.js';
import { TRACING_MIN_NODE } from '../src/config.js';
import { createDeliveryQueue } from '../src/queue/deliveries-queue.js';
import { runQueueName } from '../src/runs/run-queues.js';
import { interpretPayload } from '../src/webhooks/delivery.js';
import type { LoadResult } from './load-client.js';
import { deliveryBody } from './payload.js';
import type { Pinning } from './pinning.js';
import { CLI, cpuMicros, here, runJsonProcess, startReceiverUnderTest } from './processes.js';

export interface TracingBenchOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly pinning: Pinning;
  readonly rounds: number;
  readonly seconds: number;
  readonly connections: number;
  readonly deliveries: number;
}

export interface TracingSide {
  /** Requests (receiver) or deliveries (worker) per second, one per round. */
  readonly perSecond: number[];
  /** Server CPU µs per request or delivery, one per round. */
  readonly cpuMicros: number[];
}

export type TracingBenchResult =
  | { readonly skipped: string }
  | {
      readonly receiver: { readonly off: TracingSide; readonly on: TracingSide };
      readonly worker: { readonly off: TracingSide; readonly on: TracingSide };
      /** What the sink received: OTLP requests and bytes. */
      readonly exported: { readonly requests: number; readonly bytes: number };
    };

const SECRET = 'bench-tracing-secret-0123456789';
const LOAD_CLIENT = here('./load-client.js');
const NO_OP_HANDLER = here('../../bench/no-op-handler.mjs');

/** Room for every span of a round: exported every 200 ms, in batches of up to 2 048. */
const EXPORT_EVERYTHING = {
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  OTEL_BSP_SCHEDULE_DELAY: '200',
  OTEL_BSP_MAX_QUEUE_SIZE: '200000',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048',
  OTEL_TRACES_SAMPLER: 'always_on',
};

export async function benchTracing(options: TracingBenchOptions): Promise<TracingBenchResult> {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const [needMajor = 0, needMinor = 0] = TRACING_MIN_NODE.split('.').map(Number);
  if (major < needMajor || (major === needMajor && minor < needMinor)) {
    return { skipped: `tracing needs Node ${TRACING_MIN_NODE}; this run is on ${process.version}` };
  }
  const sink = await startSink();
  try {
    const tracing = { ...EXPORT_EVERYTHING, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url };
    const receiver = await benchReceivers(options, tracing);
    const worker = await benchWorkers(options, tracing);
    return { receiver, worker, exported: { requests: sink.requests, bytes: sink.bytes } };
  } finally {
    await sink.close();
  }
}

async function benchReceivers(options: TracingBenchOptions, tracing: Record<string, string>) {
  const start = async (env: Record<string, string>) =>
    startReceiverUnderTest(options.pinning, await freePort(), {
      secret: SECRET,
      redisUrl: options.redisUrl,
      prefix: `bench-tracing-${randomUUID().slice(0, 6)}`,
      env,
    });
  const servers = { off: await start({}), on: await start(tracing) };
  const sides = { off: side(), on: side() };
  try {
    const load = (target: 'off' | 'on', seconds: number) =>
      runJsonProcess<LoadResult>(options.pinning, LOAD_CLIENT, {
        url: `${servers[target].url}/webhooks/feedback`,
        connections: options.connections,
        seconds,
        secret: SECRET,
        runId: randomUUID().slice(0, 8),
      });
    // A warm-up of each, alone, not counted.
    for (const target of ['off', 'on'] as const) await load(target, 2);
    for (let round = 0; round < options.rounds; round += 1) {
      await options.redis.flushall();
      const before = { off: cpu(servers.off), on: cpu(servers.on) };
      const [off, on] = await Promise.all([
        load('off', options.seconds),
        load('on', options.seconds),
      ]);
      for (const [target, result] of [
        ['off', off!],
        ['on', on!],
      ] as const) {
        if (result.notOk > 0 || result.errors > 0) {
          throw new Error(`tracing ${target}: ${result.notOk} non-2xx, ${result.errors} errors`);
        }
        const answered = result.ok + result.notOk;
        sides[target].perSecond.push(result.requestsPerSecond);
        sides[target].cpuMicros.push((cpu(servers[target]) - before[target]) / answered);
      }
      process.stderr.write(
        `tracing   receiver paired round ${round + 1}: off ${Math.round(off!.requestsPerSecond)} req/s, on ${Math.round(on!.requestsPerSecond)} req/s\n`,
      );
    }
  } finally {
    await servers.off.stop();
    await servers.on.stop();
    await options.redis.flushall();
  }
  return sides;
}

async function benchWorkers(options: TracingBenchOptions, tracing: Record<string, string>) {
  const sides = { off: side(), on: side() };
  // A warm-up round of each, not counted, then alternating rounds.
  for (let round = -1; round < options.rounds; round += 1) {
    for (const target of ['off', 'on'] as const) {
      await options.redis.flushall();
      const prefix = `bench-tracing-worker-${randomUUID().slice(0, 6)}`;
      const total = round < 0 ? 1_000 : options.deliveries;
      await fill(options.redis, prefix, total);
      const drained = await drain(options, prefix, total, target === 'on' ? tracing : {});
      if (round < 0) continue;
      sides[target].perSecond.push(drained.perSecond);
      sides[target].cpuMicros.push(drained.cpuMicros);
      process.stderr.write(
        `tracing   worker ${target.padEnd(3)} round ${round + 1}: ${Math.round(drained.perSecond)} deliveries/s, ${Math.round(drained.cpuMicros)} µs CPU/delivery\n`,
      );
    }
  }
  await options.redis.flushall();
  return sides;
}

async function fill(redis: Redis, prefix: string, count: number): Promise<void> {
  const queue = createDeliveryQueue({ connection: redis, prefix, dedupeTtlSeconds: 3600 });
  for (let from = 0; from < count; from += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, count - from) }, (_, offset) => {
        const outcome = interpretPayload(Buffer.from(deliveryBody(`fb_t${from + offset}`)), {
          receivedAt: new Date(),
        });
        if (outcome.kind !== 'delivery') throw new Error('the bench payload is not a delivery');
        return queue.enqueue(outcome.delivery);
      }),
    );
  }
  await queue.close();
}

/**
 * Starts `work` on the server's core on a filled queue, and waits until every run completed.
 * The clock and the CPU count start at its "worker started" line, once its modules are loaded.
 */
async function drain(
  { redis, redisUrl, pinning }: TracingBenchOptions,
  prefix: string,
  total: number,
  env: Record<string, string>,
): Promise<{ perSecond: number; cpuMicros: number }> {
  const child = spawn(...pinning.command('server', process.execPath, [CLI, 'work']), {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      HANDLERS: NO_OP_HANDLER,
      WORKER_CONCURRENCY: '50',
      METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  try {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 120_000;
    while (!output.includes('"msg":"worker started"')) {
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`work did not start:\n${output}`);
      }
      await sleep(10);
    }
    const started = performance.now();
    const cpuBefore = cpuMicros(child.pid);
    const runs = new Queue(runQueueName('no-op'), { connection: redis, prefix });
    try {
      while ((await runs.getCompletedCount()) < total) {
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`work did not drain ${total} deliveries:\n${output.slice(-2_000)}`);
        }
        await sleep(50);
      }
    } finally {
      await runs.close();
    }
    const seconds = (performance.now() - started) / 1000;
    return { perSecond: total / seconds, cpuMicros: (cpuMicros(child.pid) - cpuBefore) / total };
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  }
}

function side(): TracingSide {
  return { perSecond: [], cpuMicros: [] };
}

function cpu(server: { child: { pid?: number | undefined } }): number {
  return cpuMicros(server.child.pid);
}

/** An OTLP/HTTP endpoint that reads what it is sent and drops it. */
async function startSink() {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      requests += 1;
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get bytes() {
      return bytes;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
