/**
 * The whole worker path (routing each delivery, which adds its run, then the run of one no-op
 * handler as a `handler-runs` job, with its bookkeeping, logging and metrics), as
 * `feedback-receiver work` runs it, against a bare BullMQ Worker with a no-op processor draining
 * the same number of jobs in the same run. The queues are filled first; the clock runs from the
 * worker's start until the last handler run (the last bare job's processor) has run. A delivery
 * is two jobs, a bare job one.
 */
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadWorkerConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createDeliveryQueue } from '../src/queue/deliveries-queue.js';
import { interpretPayload } from '../src/webhooks/delivery.js';
import type { Delivery } from '../src/webhooks/delivery.js';
import { startWorker } from '../src/worker-process.js';
import { defineHandler } from '../src/worker/handler.js';
import { deliveryBody } from './payload.js';
import { sharedReportBody } from './shared-report-bodies.js';

export const WORKER_TARGETS = ['bare BullMQ', 'worker path'] as const;
export type WorkerTarget = (typeof WORKER_TARGETS)[number];

export interface WorkerBenchOptions {
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly concurrencies: readonly number[];
  readonly rounds: number;
  readonly jobs: number;
}

/** Deliveries per second, by concurrency and target, one figure per round. */
export type WorkerBenchResult = Map<number, Map<WorkerTarget, number[]>>;

const PREFIX = 'bench-worker';
const WARMUP_JOBS = 2_000;

export async function benchWorker(options: WorkerBenchOptions): Promise<WorkerBenchResult> {
  const result: WorkerBenchResult = new Map();
  for (const concurrency of options.concurrencies) {
    const byTarget = new Map<WorkerTarget, number[]>(WORKER_TARGETS.map((target) => [target, []]));
    // One at a time drains several times slower: fewer jobs keep its rounds as long as the others'.
    const perRound = {
      ...options,
      jobs: concurrency === 1 ? Math.ceil(options.jobs / 5) : options.jobs,
    };
    // A warm-up round, not counted: the first round of a process runs on code not yet optimised.
    for (const target of WORKER_TARGETS) {
      await options.redis.flushall();
      const warmup = { ...options, jobs: Math.min(options.jobs, WARMUP_JOBS) };
      await drain(target, await fill(target, warmup), concurrency, warmup);
    }
    for (let round = 0; round < options.rounds; round += 1) {
      for (const target of WORKER_TARGETS) {
        await options.redis.flushall();
        const deliveries = await fill(target, perRound);
        const perSecond = await drain(target, deliveries, concurrency, perRound);
        byTarget.get(target)!.push(perSecond);
        process.stderr.write(
          `worker    c=${concurrency}  ${target.padEnd(12)} round ${round + 1}: ${Math.round(perSecond)} deliveries/s\n`,
        );
      }
    }
    result.set(concurrency, byTarget);
  }
  await options.redis.flushall();
  return result;
}

/**
 * Which records the deliveries carry: all alike (the bench payload, one text: the worst case for
 * grouping, each delivery like every earlier one), or the shared duplicate reports in their
 * files' order (a realistic mix of texts and groups).
 */
export type FillRecords = 'alike' | 'shared';

/** Queues `jobs` distinct deliveries: through the receiver's own enqueue, or as plain jobs. */
export async function fill(
  target: WorkerTarget,
  {
    redis,
    jobs,
    prefix = PREFIX,
    records = 'alike',
  }: { redis: Redis; jobs: number; prefix?: string; records?: FillRecords },
): Promise<number> {
  const bodyOf = records === 'alike' ? deliveryBody : sharedReportBody;
  const deliveries = Array.from({ length: jobs }, (_, index) => {
    const outcome = interpretPayload(Buffer.from(bodyOf(`fb_w${index}`, index)), {
      receivedAt: new Date(),
    });
    if (outcome.kind !== 'delivery') throw new Error('the bench payload is not a delivery');
    return outcome.delivery;
  });
  if (target === 'worker path') {
    const queue = createDeliveryQueue({
      connection: redis,
      prefix,
      dedupeTtlSeconds: 3600,
    });
    await Promise.all(deliveries.map((delivery) => queue.enqueue(delivery)));
    await queue.close();
  } else {
    const queue = new Queue<Delivery>('bare', { connection: redis, prefix });
    await queue.addBulk(deliveries.map((data) => ({ name: data.event, data })));
    await queue.close();
  }
  return deliveries.length;
}

async function drain(
  target: WorkerTarget,
  total: number,
  concurrency: number,
  { redisUrl }: WorkerBenchOptions,
): Promise<number> {
  let done = 0;
  let finished!: () => void;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  const count = () => {
    done += 1;
    if (done === total) finished();
  };
  const started = performance.now();

  if (target === 'bare BullMQ') {
    const worker = new Worker('bare', async () => count(), {
      connection: { url: redisUrl, maxRetriesPerRequest: null },
      prefix: PREFIX,
      concurrency,
    });
    await allDone;
    const seconds = (performance.now() - started) / 1000;
    await worker.close();
    return total / seconds;
  }

  // Logs at info, as in production, into /dev/null: their cost counts, their text does not.
  const logger = createLogger({ level: 'info', destination: pino.destination('/dev/null') });
  const worker = await startWorker(
    loadWorkerConfig({
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: PREFIX,
      WORKER_CONCURRENCY: String(concurrency),
      METRICS_PORT: '0',
    }),
    logger,
    { handlers: [defineHandler({ name: 'no-op', handle: async () => count() })] },
  );
  await allDone;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  return total / seconds;
}
