/**
 * The worker against bare BullMQ in paired rounds: `feedback-receiver work` (one no-op handler)
 * and a bare BullMQ worker (bare-worker.ts), each a process of its own, both on the server's core
 * at once, each draining its own filled queue. Whatever slows the machine in a round slows both,
 * so their ratio holds still where rounds that take turns swing by half (see what-we-tried.md).
 *
 * Both are CPU-bound on the one core, so the ratio of what each drained over the same window is
 * the ratio of their CPU per item: deliveries (each routed and run, two jobs) against bare jobs.
 * The window opens once each has drained a tenth of its queue (both warm) and closes when either
 * has drained nine tenths (both still busy).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { DELIVERIES_QUEUE } from '../src/queue/deliveries-queue.js';
import { runQueueName } from '../src/runs/run-queues.js';
import type { Pinning } from './pinning.js';
import { CLI, cpuMicros, here } from './processes.js';
import { fill, type FillRecords } from './worker-bench.js';

export interface PairedWorkerOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly pinning: Pinning;
  readonly concurrency: number;
  readonly rounds: number;
  /** Items in each queue per round. */
  readonly jobs: number;
  /** More environment for `feedback-receiver work` (SIMILAR=off, say). */
  readonly oursEnv?: Record<string, string>;
  /** What the worker's deliveries carry (default all alike: see FillRecords). */
  readonly records?: FillRecords;
}

export interface PairedWorkerRound {
  /** Deliveries the worker path drained over the window, per bare job drained. */
  readonly ratio: number;
  readonly oursCpuMicros: number;
  readonly bareCpuMicros: number;
}

const PREFIX = 'bench-paired';
const BARE_WORKER = here('./bare-worker.js');
const NO_OP_HANDLER = here('../../bench/no-op-handler.mjs');

export async function benchWorkerPaired(
  options: PairedWorkerOptions,
): Promise<PairedWorkerRound[]> {
  const results: PairedWorkerRound[] = [];
  // A warm-up round, not counted.
  for (let round = -1; round < options.rounds; round += 1) {
    const result = await pairedRound(options);
    if (round < 0) continue;
    results.push(result);
    process.stderr.write(
      `worker    c=${options.concurrency}  paired round ${round + 1}: ${result.ratio.toFixed(2)}x, ${Math.round(result.oursCpuMicros)} µs CPU/delivery against ${Math.round(result.bareCpuMicros)} µs/bare job\n`,
    );
  }
  await options.redis.flushall();
  return results;
}

async function pairedRound(options: PairedWorkerOptions): Promise<PairedWorkerRound> {
  const { redis, redisUrl, pinning, jobs, concurrency } = options;
  await redis.flushall();
  const started: ChildProcess[] = [];
  const deliveries = new Queue(DELIVERIES_QUEUE, { connection: redis, prefix: PREFIX });
  const runs = new Queue(runQueueName('no-op'), { connection: redis, prefix: PREFIX });
  const bare = new Queue('bare', { connection: redis, prefix: PREFIX });
  try {
    // Filled and paused: both workers start on full queues at the same moment, once both run.
    await Promise.all([deliveries.pause(), bare.pause()]);
    await fill('worker path', { redis, jobs, prefix: PREFIX, records: options.records ?? 'alike' });
    await fill('bare BullMQ', { redis, jobs, prefix: PREFIX });
    const ours = start(pinning, [CLI, 'work'], '"msg":"worker started"', {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: PREFIX,
      HANDLERS: NO_OP_HANDLER,
      WORKER_CONCURRENCY: String(concurrency),
      METRICS_PORT: '0',
      ...options.oursEnv,
    });
    const baseline = start(pinning, [BARE_WORKER, redisUrl, PREFIX, String(concurrency)], 'ready');
    started.push(ours.child, baseline.child);
    await Promise.all([ours.ready, baseline.ready]);
    await Promise.all([deliveries.resume(), bare.resume()]);

    // A delivery is two jobs, routed then run, and a short window can hold more of either:
    // half of both counts is the deliveries' worth of work done.
    const counts = async () => [
      ((await deliveries.getCompletedCount()) + (await runs.getCompletedCount())) / 2,
      await bare.getCompletedCount(),
    ];
    const cpu = () => [cpuMicros(ours.child.pid), cpuMicros(baseline.child.pid)];
    const deadline = Date.now() + 300_000;
    // Counted from the moment both have done a tenth (their start-up left out) to the moment
    // either has done nine tenths. When one is so much slower that the other is nearly done
    // before it has done a tenth, the two share no window: each is then counted over its own,
    // from its tenth to its nine tenths (the slower one mostly alone on the core), and the ratio
    // is that of their CPU per item, which is what a shared window measures.
    const tenth: ({ count: number; cpu: number } | undefined)[] = [undefined, undefined];
    let from: { counts: number[]; cpu: number[] } | undefined;
    let unshared: number[] | undefined;
    for (;;) {
      if (Date.now() > deadline) throw new Error('paired worker round: no end in 5 minutes');
      const now = { counts: await counts(), cpu: cpu() };
      now.counts.forEach((count, i) => {
        if (!tenth[i] && count >= jobs / 10) tenth[i] = { count, cpu: now.cpu[i]! };
      });
      const finishing = now.counts.some((count) => count >= (jobs * 9) / 10);
      if (!from && !unshared && now.counts.every((count) => count >= jobs / 10)) {
        from = now;
      }
      if (from && finishing) {
        const [oursDone, bareDone] = now.counts.map((count, i) => count - from!.counts[i]!);
        const [oursCpu, bareCpu] = now.cpu.map((micros, i) => micros - from!.cpu[i]!);
        return {
          ratio: oursDone! / bareDone!,
          oursCpuMicros: oursCpu! / oursDone!,
          bareCpuMicros: bareCpu! / bareDone!,
        };
      }
      if (!from && finishing) {
        // Each one's CPU per item over its own tenth to nine tenths, taken as each gets there.
        unshared ??= [Number.NaN, Number.NaN];
        now.counts.forEach((count, i) => {
          if (Number.isNaN(unshared![i]!) && tenth[i] && count >= (jobs * 9) / 10) {
            unshared![i] = (now.cpu[i]! - tenth[i].cpu) / (count - tenth[i].count);
          }
        });
        const [oursCpu, bareCpu] = unshared;
        if (!Number.isNaN(oursCpu!) && !Number.isNaN(bareCpu!)) {
          return { ratio: bareCpu! / oursCpu!, oursCpuMicros: oursCpu!, bareCpuMicros: bareCpu! };
        }
      }
      await sleep(50);
    }
  } finally {
    for (const child of started) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(started.map((child) => (child.exitCode === null ? once(child, 'exit') : 0)));
    await Promise.all([deliveries.close(), runs.close(), bare.close()]);
  }
}

/** Starts `node <args>` on the server's core; `ready` resolves once its stdout says `line`. */
function start(
  pinning: Pinning,
  args: string[],
  line: string,
  env: Record<string, string> = {},
): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(...pinning.command('server', process.execPath, args), {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(line)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}:\n${output}`)));
  });
  return { child, ready };
}
