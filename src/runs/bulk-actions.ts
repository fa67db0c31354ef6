/**
 * An operator acts on a search result at once: `retry` or `run-again` (a backfill), as
 * docs/admin-api.md says. The search is read from the history once, at most MOST_DELIVERIES, and
 * each run is taken once; its runs go out in batches of BATCH, the progress written to Redis
 * after each, so a sender's delivery never waits behind the whole lot. A process runs
 * MOST_AT_ONCE actions at most, and stops them at its shutdown, saying so.
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { ROUTING, type HistoryEntry } from '../history/delivery-history.js';
import type { HistorySearch, HistoryState } from '../history/history-search.js';
import type { JobRetention } from '../queue/deliveries-queue.js';
import type { RedisConnection } from '../queue/redis.js';
import type { SimilarFacts } from '../similar/similar-facts.js';
import { readDelivery, type Delivery } from '../webhooks/delivery.js';
import { projectOf } from '../webhooks/feedback-record.js';
import { addRuns, runJobId, type RunQueues } from './run-queues.js';
import { readRoster } from './handler-roster.js';
import { startAfresh } from './restart.js';

export interface BulkSelection {
  readonly action: 'retry' | 'run-again';
  /** The search, as the deliveries page takes it. */
  readonly q?: string | undefined;
  readonly state?: HistoryState | undefined;
  /** Only deliveries received this many milliseconds ago or later. */
  readonly sinceMs?: number | undefined;
  /** `run-again`: the handler to run. */
  readonly handler?: string | undefined;
}

export interface BulkPlan {
  readonly selection: BulkSelection;
  /** Deliveries the search found (at most MOST_DELIVERIES). */
  readonly deliveries: number;
  /** The runs it will queue, at most: one may have moved on before its turn, and is skipped. */
  readonly runs: number;
}

export interface BulkProgress {
  readonly id: string;
  readonly selection: BulkSelection;
  readonly total: number;
  readonly queued: number;
  /** Runs that were no longer as planned at their turn (under way, gone, the record gone). */
  readonly skipped: number;
  readonly state: 'running' | 'done' | 'failed';
  readonly startedAt: string;
  readonly finishedAt?: string;
  readonly error?: string;
}

/** Why a selection cannot be planned: the console and the API answer 400 with it. */
export class BulkSelectionError extends Error {}

/** Too many actions under way in this process: 503 CONSOLE_BUSY. */
export class BulkBusyError extends Error {}

/** Actions one process runs at once. */
const MOST_AT_ONCE = 2;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Deliveries one action reaches at most. */
export const MOST_DELIVERIES = 10_000;
/** Runs queued between two progress writes. */
const BATCH = 50;
/** How long the progress of an action stays readable. */
const PROGRESS_TTL_SECONDS = 86_400;

interface Target {
  readonly deliveryJobId: string;
  readonly handler: string;
}

export interface BulkActions {
  plan(selection: BulkSelection): Promise<BulkPlan>;
  /** Starts the action and answers at once; `progress` follows it. */
  start(selection: BulkSelection): Promise<BulkProgress>;
  /** Runs the action to its end (the CLI), calling `onBatch` after each batch. */
  run(selection: BulkSelection, onBatch?: (progress: BulkProgress) => void): Promise<BulkProgress>;
  progress(id: string): Promise<BulkProgress | undefined>;
  /** Stops the actions under way after their current batch; their progress says so. */
  close(): Promise<void>;
}

export function createBulkActions(options: {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly history: HistorySearch;
  readonly deliveries: Queue<Delivery>;
  readonly runQueues: Pick<RunQueues, 'of' | 'handlers'>;
  readonly dedupeTtlSeconds: number;
  /** A new run's retention: the worker's runs' (COMPLETED_JOB_RETENTION_SECONDS), not the default. */
  readonly retention: JobRetention;
  /**
   * With SIMILAR on: a delivery's grouping facts as its routing stored them (similar-groups.ts
   * `asRouted`), for a new run to see what its delivery's other runs saw.
   */
  readonly similarFacts?:
    ((deliveryKey: string, project: string) => Promise<SimilarFacts | undefined>) | undefined;
}): BulkActions {
  const { connection, prefix, history, deliveries, runQueues } = options;
  const progressKey = (id: string) => `${prefix}:bulk:${id}`;
  /** Actions under way in this process (and places taken by ones starting), and whether it is stopping. */
  const running = new Set<Promise<unknown>>();
  let closing = false;

  async function targets(selection: BulkSelection): Promise<{ found: number; runs: Target[] }> {
    const since = selection.sinceMs === undefined ? 0 : Date.now() - selection.sinceMs;
    // One search, read once: new deliveries arriving meanwhile cannot shift it.
    const { entries } = await history.search({
      q: selection.q,
      state: selection.state,
      offset: 0,
      limit: MOST_DELIVERIES,
    });
    const recent = entries.filter((entry) => Date.parse(entry.receivedAt) >= since);
    const byRun = new Map<string, Target>();
    for (const entry of recent) {
      for (const target of targetsOf(entry, selection)) {
        byRun.set(runJobId(target.deliveryJobId, target.handler), target);
      }
    }
    const runs = [...byRun.values()];
    return {
      found: recent.length,
      runs: selection.action === 'run-again' ? await stillKept(runs) : runs,
    };
  }

  /** The targets whose delivery's job (its whole record) is still kept: a backfill needs it. */
  async function stillKept(runs: readonly Target[]): Promise<Target[]> {
    const kept: Target[] = [];
    for (let start = 0; start < runs.length; start += 100) {
      const batch = runs.slice(start, start + 100);
      const states = await Promise.all(
        batch.map((target) => deliveries.getJobState(target.deliveryJobId)),
      );
      kept.push(...batch.filter((_, index) => states[index] !== 'unknown'));
    }
    return kept;
  }

  async function act(
    target: Target,
    selection: BulkSelection,
    attempts: number | undefined,
  ): Promise<boolean> {
    // A routing that failed for good is retried as a failed run is: it routes its delivery again.
    const routing = target.handler === ROUTING;
    const id = routing ? target.deliveryJobId : runJobId(target.deliveryJobId, target.handler);
    const job = await (routing ? deliveries : runQueues.of(target.handler)).getJob(id);
    if (job) {
      if (await startAfresh(job, 'failed')) return true;
      return selection.action === 'run-again' && startAfresh(job, 'completed');
    }
    if (selection.action !== 'run-again') return false;
    // The handler never saw this delivery (or its run is gone): a new run, while the record is kept.
    const deliveryJob = await deliveries.getJob(target.deliveryJobId);
    const read = deliveryJob ? readDelivery(deliveryJob.data) : undefined;
    if (!read?.ok || attempts === undefined) return false;
    // Neither a deduplication key nor a success that outlived a removed run job may make the
    // new run a no-op. BullMQ keeps the key when retention removes the job (only `clean` and
    // `remove` take it too), so it goes here; the new run has a life of its own, which no
    // earlier success matches (completion-ledger.ts).
    await runQueues.of(target.handler).removeDeduplicationKey(id);
    // Its routing grouped it before (a run added then carries the facts); the new run sees the
    // same facts, a crossing included: a run again is the first run once more, not a new arrival.
    const { record } = read.delivery;
    const project = projectOf(record);
    const similar = await options.similarFacts?.(read.delivery.key, project);
    await addRuns(
      runQueues,
      { deliveryJobId: target.deliveryJobId, delivery: read.delivery, similar },
      [{ handler: target.handler, attempts, life: Date.now() }],
      { dedupeTtlSeconds: options.dedupeTtlSeconds, retention: options.retention },
    );
    return true;
  }

  const save = (progress: BulkProgress) =>
    connection.set(progressKey(progress.id), JSON.stringify(progress), 'EX', PROGRESS_TTL_SECONDS);

  async function execute(
    { progress, runs, attempts }: Awaited<ReturnType<typeof begin>>,
    onBatch?: (progress: BulkProgress) => void,
  ): Promise<BulkProgress> {
    let current = progress;
    try {
      for (let start = 0; start < runs.length; start += BATCH) {
        if (closing)
          throw new Error('the process stopped before the end; start it again to queue the rest');
        const done = await Promise.all(
          runs
            .slice(start, start + BATCH)
            .map((target) => act(target, progress.selection, attempts)),
        );
        const queued = done.filter(Boolean).length;
        current = {
          ...current,
          queued: current.queued + queued,
          skipped: current.skipped + done.length - queued,
        };
        await save(current);
        onBatch?.(current);
      }
      current = { ...current, state: 'done', finishedAt: new Date().toISOString() };
    } catch (error) {
      current = {
        ...current,
        state: 'failed',
        finishedAt: new Date().toISOString(),
        error: (error as Error).message,
      };
    }
    await save(current).catch(() => {});
    return current;
  }

  /** The handler's attempts for a new run, from the roster its workers write. */
  async function attemptsOf(selection: BulkSelection): Promise<number | undefined> {
    if (selection.action !== 'run-again') return undefined;
    const roster = await readRoster(connection, prefix);
    const attempts = roster.find((entry) => entry.name === selection.handler)?.attempts;
    if (attempts === undefined) {
      throw new BulkSelectionError(
        `no worker has started with a handler named "${selection.handler ?? ''}"`,
      );
    }
    return attempts;
  }

  async function begin(selection: BulkSelection) {
    const attempts = await attemptsOf(selection);
    const { runs } = await targets(selection);
    const progress: BulkProgress = {
      id: randomUUID(),
      selection,
      total: runs.length,
      queued: 0,
      skipped: 0,
      state: 'running',
      startedAt: new Date().toISOString(),
    };
    await save(progress);
    return { progress, runs, attempts };
  }

  return {
    async plan(selection) {
      await attemptsOf(selection);
      const { found, runs } = await targets(selection);
      return { selection, deliveries: found, runs: runs.length };
    },
    async start(selection) {
      if (running.size >= MOST_AT_ONCE) {
        throw new BulkBusyError(`${MOST_AT_ONCE} bulk actions are under way; wait for one to end`);
      }
      // Its place is taken before the first await, so two starts cannot both pass the check. It
      // goes on after the answer; its progress is in Redis.
      const begun = begin(selection);
      const going = begun
        .then(
          (action) => execute(action),
          () => undefined,
        )
        .finally(() => running.delete(going));
      running.add(going);
      return (await begun).progress;
    },
    async run(selection, onBatch) {
      return execute(await begin(selection), onBatch);
    },
    async close() {
      closing = true;
      await Promise.all(running);
    },
    async progress(id) {
      if (!UUID.test(id)) return undefined;
      const stored = await connection.get(progressKey(id));
      return stored === null ? undefined : (JSON.parse(stored) as BulkProgress);
    },
  };
}

/** The runs an action takes from one delivery of the result. */
function targetsOf(entry: HistoryEntry, selection: BulkSelection): Target[] {
  const { deliveryJobId } = entry;
  if (selection.action === 'run-again') return [{ deliveryJobId, handler: selection.handler! }];
  return Object.entries(entry.outcomes)
    .filter(([, outcome]) => outcome.state === 'failed')
    .map(([handler]) => ({ deliveryJobId, handler }));
}
