/**
 * What happened to each delivery, read from the queues for the delivery console: the newest
 * deliveries, or those whose feedback id, delivery key, title, description or reporter email
 * matches a search, each with its runs as the one reader of runs sees them (run-reader.ts);
 * under the `quarantined` filter, the quarantine's entries. Nothing else is kept for this: a
 * delivery is here while its job is (completed ones for COMPLETED_JOB_RETENTION_SECONDS, failed
 * ones 7 days), and a run while its job is (failed runs 30 days).
 */
import type { Job, Queue } from 'bullmq';
import { findDelivery } from '../queue/deliveries-queue.js';
import type { Quarantine, QuarantineSummary } from '../queue/quarantine.js';
import { traceIdOf } from '../tracing/trace-id.js';
import { readDelivery, type Delivery } from '../webhooks/delivery.js';
import { iso, type RunReader, type RunView } from './run-reader.js';

export type { RunView } from './run-reader.js';

/** Where a delivery stands: not taken yet, being handled, handled, or some handler failed. */
export const DELIVERY_STATES = ['waiting', 'running', 'done', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** What a list can be filtered by: a state, or the deliveries kept in the quarantine instead. */
export const DELIVERY_FILTERS = [...DELIVERY_STATES, 'quarantined'] as const;
export type DeliveryFilter = (typeof DELIVERY_FILTERS)[number];

/** A signed delivery that could not be read, listed under the `quarantined` filter. */
export type QuarantinedDelivery = QuarantineSummary & { readonly state: 'quarantined' };

export interface DeliveryView {
  readonly key: string;
  readonly receivedAt: string;
  /** How the receiver accepted it: the signature scheme and the secret position that matched. */
  readonly receipt?: Delivery['receipt'];
  /** When it was queued, when a worker took it, and when routing it was done. */
  readonly queuedAt: string;
  readonly takenAt?: string;
  readonly routedAt?: string;
  readonly record: Delivery['record'];
  readonly state: DeliveryState;
  /** Why routing failed, for a delivery no handler saw. */
  readonly reason?: string;
  readonly runs: readonly RunView[];
  /** The delivery's trace, when the receiver that took it had tracing on. */
  readonly traceId?: string;
}

export interface DeliveryQuery {
  /** A feedback id, a delivery key, words of the title or description, or a reporter email. */
  readonly q?: string | undefined;
  readonly state?: DeliveryFilter | undefined;
  readonly offset: number;
  readonly limit: number;
}

export interface DeliveryPage {
  /** Quarantined ones only under the `quarantined` filter, and then only those. */
  readonly deliveries: readonly (DeliveryView | QuarantinedDelivery)[];
  /** Deliveries that match, among the newest `searched`. */
  readonly total: number;
  /** How many of the newest deliveries were looked through (at most SEARCH_WINDOW). */
  readonly searched: number;
}

export interface DeliveryLog {
  /** Newest first. */
  list(query: DeliveryQuery): Promise<DeliveryPage>;
  /** One delivery by its key; undefined when its job is gone or never was. */
  get(key: string): Promise<DeliveryView | undefined>;
}

/** How many of the newest deliveries a search looks through; a delivery key always finds its own. */
export const SEARCH_WINDOW = 2_000;

/** How many jobs one read takes (see newestIn). */
const READ_PAGE = 200;

type JobState = 'waiting' | 'active' | 'delayed' | 'completed' | 'failed';
const JOB_STATES: readonly JobState[] = ['active', 'waiting', 'delayed', 'completed', 'failed'];

export function createDeliveryLog(
  deliveries: Queue<Delivery>,
  runs: RunReader,
  quarantine: Pick<Quarantine, 'search' | 'count'>,
): DeliveryLog {
  /** The `count` newest jobs of every state together, newest first, each with its state. */
  async function newest(
    count: number,
  ): Promise<{ job: Job<Delivery>; state: JobState; delivery: Delivery }[]> {
    const byState = await Promise.all(
      JOB_STATES.map(async (state) =>
        (await newestIn(state, count)).map((job) => ({ job, state })),
      ),
    );
    return byState
      .flat()
      .sort((a, b) => b.job.timestamp - a.job.timestamp)
      .slice(0, count)
      .flatMap(({ job, state }) => {
        const read = readDelivery(job.data);
        return read.ok ? [{ job, state, delivery: read.delivery }] : [];
      });
  }

  /**
   * Read a page at a time: parsing a page's records is one stretch of the event loop, and the
   * deliveries the process answers meanwhile wait for at most one.
   */
  async function newestIn(state: JobState, count: number): Promise<Job<Delivery>[]> {
    const jobs: Job<Delivery>[] = [];
    for (let start = 0; start < count; start += READ_PAGE) {
      const end = Math.min(start + READ_PAGE, count) - 1;
      const page = await deliveries.getJobs([state], start, end, false);
      jobs.push(...page);
      if (page.length <= end - start) break;
    }
    return jobs;
  }

  async function view(
    job: Job<Delivery>,
    state: JobState,
    delivery: Delivery,
  ): Promise<DeliveryView> {
    const base = {
      key: delivery.key,
      receivedAt: delivery.receivedAt,
      record: delivery.record,
      ...(delivery.receipt ? { receipt: delivery.receipt } : {}),
      queuedAt: iso(job.timestamp),
      ...(job.processedOn ? { takenAt: iso(job.processedOn) } : {}),
      ...(state === 'completed' && job.finishedOn ? { routedAt: iso(job.finishedOn) } : {}),
      ...traceOf(job),
    };
    if (state === 'failed') return { ...base, state: 'failed', reason: job.failedReason, runs: [] };
    if (state !== 'completed') {
      return { ...base, state: state === 'active' ? 'running' : 'waiting', runs: [] };
    }
    const routed = await runs.runsOf(job);
    return { ...base, state: stateOf(routed), runs: routed };
  }

  return {
    async list({ q, state, offset, limit }) {
      const wanted = q?.trim() ?? '';
      if (state === 'quarantined') {
        const found = await quarantine.search(wanted, SEARCH_WINDOW);
        return {
          deliveries: found
            .slice(offset, offset + limit)
            .map((entry) => ({ ...entry, state: 'quarantined' as const })),
          total: found.length,
          searched: Math.min(SEARCH_WINDOW, await quarantine.count()),
        };
      }
      if (wanted === '' && state === undefined) {
        // The newest page alone: no need to look through more.
        const [looked, counts] = await Promise.all([
          newest(offset + limit),
          deliveries.getJobCounts(...JOB_STATES),
        ]);
        const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
        const shown = looked.slice(offset, offset + limit);
        return {
          deliveries: await Promise.all(
            shown.map(({ job, state: jobState, delivery }) => view(job, jobState, delivery)),
          ),
          total,
          searched: total,
        };
      }
      const looked = await newest(SEARCH_WINDOW);
      let found =
        wanted === '' ? looked : looked.filter(({ delivery }) => matches(delivery, wanted));
      // A delivery key finds its delivery even beyond the newest SEARCH_WINDOW.
      const byKey = wanted === '' ? undefined : await findDelivery(deliveries, wanted);
      if (byKey && !found.some(({ job }) => job.id === byKey.id)) {
        const read = readDelivery(byKey.data);
        const jobState = (await byKey.getState()) as JobState;
        if (read.ok) found = [{ job: byKey, state: jobState, delivery: read.delivery }, ...found];
      }
      const page = async (from: typeof found) => {
        const views: DeliveryView[] = [];
        for (let start = 0; start < from.length; start += READ_PAGE) {
          const batch = from.slice(start, start + READ_PAGE);
          views.push(
            ...(await Promise.all(
              batch.map(({ job, state, delivery }) => view(job, state, delivery)),
            )),
          );
        }
        return views;
      };
      if (state === undefined) {
        const deliveries = await page(found.slice(offset, offset + limit));
        return { deliveries, total: found.length, searched: looked.length };
      }
      // A completed delivery's state depends on its runs, so a filter on it reads them all.
      const inState = (await page(found)).filter((shown) => shown.state === state);
      return {
        deliveries: inState.slice(offset, offset + limit),
        total: inState.length,
        searched: looked.length,
      };
    },

    async get(key) {
      const job = await findDelivery(deliveries, key);
      if (!job) return undefined;
      const read = readDelivery(job.data);
      if (!read.ok) return undefined;
      return view(job, (await job.getState()) as JobState, read.delivery);
    },
  };
}

function traceOf(job: Job<Delivery>): { traceId?: string } {
  const traceId = traceIdOf(job.opts.telemetry?.metadata);
  return traceId ? { traceId } : {};
}

function stateOf(runs: readonly RunView[]): DeliveryState {
  if (runs.some((run) => run.state === 'failed')) return 'failed';
  if (runs.some((run) => run.state === 'pending')) return 'running';
  return 'done';
}

/** A feedback id or record id, words of the title or description, or the reporter's email. */
function matches({ key, record }: Delivery, search: string): boolean {
  const wanted = search.toLowerCase();
  const fields = [
    key,
    record.id,
    record.feedback_id === null || record.feedback_id === undefined
      ? undefined
      : String(record.feedback_id),
    record.title,
    record.description,
    record.reporter?.email,
  ];
  return fields.some((field) => typeof field === 'string' && field.toLowerCase().includes(wanted));
}
