/**
 * Prometheus metrics (prom-client), one registry per process, served at /metrics. The receiver
 * and the worker each fill in their part; both export process metrics and queue depths. Queue
 * depths are read at most once per QUEUE_COUNTS_MAX_AGE_MS, however often and however many
 * scrapers ask, so scraping cannot load Redis.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  /** Deliveries by outcome: queued, duplicate, quarantined, ignored, rejected (with its reason). */
  readonly deliveries: Counter<'outcome' | 'reason'>;
  /** Which accepted secret matched, by position: 1 is the first in WEBHOOK_SECRET. */
  readonly secretMatches: Counter<'index'>;
  readonly requestDuration: Histogram<'method' | 'route' | 'status'>;
  readonly enqueueDuration: Histogram;
  readonly handlerRuns: Counter<'handler' | 'outcome'>;
  readonly handlerRunDuration: Histogram<'handler' | 'outcome'>;
  readonly apiRequests: Counter<'method' | 'status'>;
  readonly rateLimitWaitSeconds: Counter;
  /** The time grouping (SIMILAR) adds to a routing: compare, store, join. */
  readonly similarDuration: Histogram;
  /** Quarantine entries dropped to keep it within its bounds, by bound: age, count, bytes. */
  readonly quarantineDropped: Counter<'bound'>;
  /** Delivery history entries the worker dropped, oldest first, past HISTORY_MAX_DELIVERIES. */
  readonly historyDropped: Counter;
  /**
   * Reports the depths (waiting, active, delayed, failed) of these queues on scrapes. A function
   * is asked at each read, for a list of queues that changes (one per handler, as workers
   * announce them). The counts are read on the queues' own connection: give queues opened on a
   * connection that no sender waits on.
   */
  watchQueues(queues: readonly Queue[] | (() => Promise<readonly Queue[]>)): void;
}

export interface MetricsOptions {
  /**
   * How long queue depths read for one scrape serve the next ones. Default:
   * QUEUE_COUNTS_MAX_AGE_MS.
   */
  readonly queueCountsMaxAgeMs?: number;
  /** The clock, in milliseconds; tests pass their own. Default: `performance.now`. */
  readonly now?: () => number;
}

/** How long a scrape waits for the queue depths; Prometheus's own timeout is 10 s by default. */
const QUEUE_COUNTS_WAIT_MS = 2_000;

/** Queue depths a scrape reports may be this old: Prometheus scrapes every 15 s or more. */
export const QUEUE_COUNTS_MAX_AGE_MS = 5_000;

const COUNTED_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

type QueueCounts = readonly { readonly queue: string; readonly counts: Record<string, number> }[];

const FAST = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const SLOW = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createMetrics({
  queueCountsMaxAgeMs = QUEUE_COUNTS_MAX_AGE_MS,
  now = () => performance.now(),
}: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'feedback_receiver_' });
  const registers = [registry];
  const sources: (() => Promise<readonly Queue[]>)[] = [];
  const readQueueCounts = reusedFor(queueCountsMaxAgeMs, now, async (): Promise<QueueCounts> => {
    const queues = (await Promise.all(sources.map((source) => source()))).flat();
    return Promise.all(
      queues.map(async (queue) => ({
        queue: queue.name,
        counts: await queue.getJobCounts(...COUNTED_STATES),
      })),
    );
  });

  // Both gauges ask for the one shared read: a registry collects its metrics concurrently. A
  // worker's connection waits for Redis rather than fail, so the scrape waits a bounded while.
  const readCountsOrNothing = () =>
    Promise.race([
      readQueueCounts().catch(() => undefined),
      sleep(QUEUE_COUNTS_WAIT_MS, undefined, { ref: false }),
    ]);
  const countsRead = () =>
    new Gauge({
      name: 'feedback_receiver_queue_jobs_read',
      help: 'Whether this scrape could read the queue depths (1), or Redis did not answer and feedback_receiver_queue_jobs is left out (0).',
      registers,
      async collect() {
        this.set((await readCountsOrNothing()) === undefined ? 0 : 1);
      },
    });
  new Gauge({
    name: 'feedback_receiver_queue_jobs',
    help: 'Jobs in each queue by state.',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      if (sources.length === 0) return;
      this.reset();
      // A scrape still answers while Redis is away (or not yet connected): the process's own
      // metrics matter most then, and a depth from before the outage would mislead.
      const read = await readCountsOrNothing();
      for (const { queue, counts } of read ?? []) {
        for (const [state, count] of Object.entries(counts)) this.set({ queue, state }, count);
      }
    },
  });

  return {
    registry,
    deliveries: new Counter({
      name: 'feedback_receiver_deliveries_total',
      help: 'Deliveries received, by outcome (and reason, for rejected ones).',
      labelNames: ['outcome', 'reason'],
      registers,
    }),
    secretMatches: new Counter({
      name: 'feedback_receiver_secret_matches_total',
      help: 'Signatures accepted, by the secret that matched, numbered from 1 in the order of WEBHOOK_SECRET; an old secret whose count stops growing can be retired.',
      labelNames: ['index'],
      registers,
    }),
    requestDuration: new Histogram({
      name: 'feedback_receiver_http_request_duration_seconds',
      help: 'HTTP request latency.',
      labelNames: ['method', 'route', 'status'],
      buckets: FAST,
      registers,
    }),
    enqueueDuration: new Histogram({
      name: 'feedback_receiver_enqueue_duration_seconds',
      help: 'Time to store an accepted delivery in Redis.',
      buckets: FAST,
      registers,
    }),
    handlerRuns: new Counter({
      name: 'feedback_receiver_handler_runs_total',
      help: 'Handler runs by handler and outcome (completed, retrying, failed, delayed, interrupted).',
      labelNames: ['handler', 'outcome'],
      registers,
    }),
    handlerRunDuration: new Histogram({
      name: 'feedback_receiver_handler_run_duration_seconds',
      help: 'Handler run duration by handler and outcome.',
      labelNames: ['handler', 'outcome'],
      buckets: SLOW,
      registers,
    }),
    apiRequests: new Counter({
      name: 'feedback_receiver_api_requests_total',
      help: 'Calls to the feedback API by method and status ("error" when no answer came).',
      labelNames: ['method', 'status'],
      registers,
    }),
    rateLimitWaitSeconds: new Counter({
      name: 'feedback_receiver_api_rate_limit_wait_seconds_total',
      help: 'Time API calls spent waiting for a slot of the shared rate limit.',
      registers,
    }),
    similarDuration: new Histogram({
      name: 'feedback_receiver_similar_seconds',
      help: 'Time grouping added to a routing (SIMILAR): comparing the delivery with the earlier ones of its project, storing it and joining its group.',
      buckets: FAST,
      registers,
    }),
    quarantineDropped: new Counter({
      name: 'feedback_receiver_quarantine_dropped_total',
      help: 'Quarantine entries dropped, oldest first, to keep it within QUARANTINE_MAX_AGE_DAYS (bound "age"), QUARANTINE_MAX_ENTRIES ("count") and QUARANTINE_MAX_BYTES ("bytes").',
      labelNames: ['bound'],
      registers,
    }),
    historyDropped: new Counter({
      name: 'feedback_receiver_history_dropped_total',
      help: 'Delivery history entries dropped, oldest first, to keep it within HISTORY_MAX_DELIVERIES (deliveries and runs are not affected).',
      registers,
    }),
    watchQueues: (queues) => {
      // Only once something is watched: before, a 0 would read as "Redis did not answer".
      if (sources.length === 0) countsRead();
      sources.push(typeof queues === 'function' ? queues : async () => queues);
    },
  };
}

/**
 * `read`, called at most once at a time: callers while a read is in flight share it, and its
 * result serves callers for `maxAgeMs` after it arrived. A failed read is not kept, so the next
 * caller tries again.
 */
function reusedFor<T>(
  maxAgeMs: number,
  now: () => number,
  read: () => Promise<T>,
): () => Promise<T> {
  let last: { readonly value: Promise<T>; arrivedAt: number | undefined } | undefined;
  return () => {
    if (last && (last.arrivedAt === undefined || now() - last.arrivedAt < maxAgeMs)) {
      return last.value;
    }
    const value = read();
    const entry: { readonly value: Promise<T>; arrivedAt: number | undefined } = {
      value,
      arrivedAt: undefined,
    };
    last = entry;
    value.then(
      () => {
        entry.arrivedAt = now();
      },
      () => {
        if (last === entry) last = undefined;
      },
    );
    return value;
  };
}
