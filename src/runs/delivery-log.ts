/**
 * What happened to each delivery, for the delivery console: lists and searches read the delivery
 * history (src/history), compact entries kept DEDUPE_TTL_SECONDS, never whole records; one
 * delivery's page reads its job while it is kept (the whole record, its runs as the one reader of
 * runs sees them, run-reader.ts), and its history entry after that. Deliveries not yet routed
 * are under the `waiting` filter, read from their queue; the `quarantined` filter lists the
 * quarantine's entries.
 */
import type { Job, JobState, Queue } from 'bullmq';
import { summarize, type HistoryEntry, type RecordSummary } from '../history/delivery-history.js';
import { stateOfEntry, type HistoryQuery, type HistorySearch } from '../history/history-search.js';
import { findDelivery } from '../queue/deliveries-queue.js';
import type { Quarantine, QuarantineSummary } from '../queue/quarantine.js';
import { traceIdOf } from '../tracing/trace-id.js';
import { readDelivery, type Delivery } from '../webhooks/delivery.js';
import { iso, type RunReader, type RunState, type RunView } from './run-reader.js';

/** Where a delivery stands: not routed yet, being handled, handled, or some handler failed. */
export const DELIVERY_STATES = ['waiting', 'running', 'done', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** What a list can be filtered by: a state, or the deliveries kept in the quarantine instead. */
export const DELIVERY_FILTERS = [...DELIVERY_STATES, 'quarantined'] as const;
export type DeliveryFilter = (typeof DELIVERY_FILTERS)[number];

/** A signed delivery that could not be read, listed under the `quarantined` filter. */
export type QuarantinedDelivery = QuarantineSummary & { readonly state: 'quarantined' };

/** A run as a list shows it. */
export interface RunSummary {
  readonly handler: string;
  readonly state: RunState;
  readonly reason?: string;
  /** What it returned, as much as the history keeps (auto-triage: the rules and the PATCH). */
  readonly result?: unknown;
  readonly finishedAt?: string;
}

/** A delivery as a list shows it: what the history keeps of it. */
export interface DeliverySummary {
  readonly key: string;
  readonly receivedAt: string;
  readonly record: RecordSummary;
  readonly state: DeliveryState;
  readonly runs: readonly RunSummary[];
}

export interface DeliveryView {
  readonly key: string;
  readonly receivedAt: string;
  /** How the receiver accepted it: the signature scheme and the secret position that matched. */
  readonly receipt?: Delivery['receipt'];
  /** When it was queued, when a worker took it, and when routing it was done. */
  readonly queuedAt?: string;
  readonly takenAt?: string;
  readonly routedAt?: string;
  /** The whole record while its job is kept; after that, what the history keeps of it. */
  readonly record: Delivery['record'];
  /** False once its job is gone: `record` then holds only what the history keeps. */
  readonly recordKept: boolean;
  readonly state: DeliveryState;
  /** Why routing failed, for a delivery no handler saw. */
  readonly reason?: string;
  readonly runs: readonly RunView[];
  /** The delivery's trace, when the receiver that took it had tracing on. */
  readonly traceId?: string;
}

/** A history search (`q`: a feedback id, a record id, a delivery key, words, an email) by filter. */
export type DeliveryQuery = Omit<HistoryQuery, 'state'> & {
  readonly state?: DeliveryFilter | undefined;
};

export interface DeliveryPage {
  /** Quarantined ones only under the `quarantined` filter, and then only those. */
  readonly deliveries: readonly (DeliverySummary | QuarantinedDelivery)[];
  /** Deliveries that match, among the `searched`. */
  readonly total: number;
  /** How many deliveries the search covered (see HistoryPage.searched). */
  readonly searched: number;
}

export interface DeliveryLog {
  /** Newest first. */
  list(query: DeliveryQuery): Promise<DeliveryPage>;
  /** One delivery by its key; undefined when neither its job nor its history entry is kept. */
  get(key: string): Promise<DeliveryView | undefined>;
}

/** How far back pages reach. */
export const MAX_OFFSET = 100_000;
/** How many not yet routed deliveries the `waiting` filter reads, newest first. */
export const WAITING_SHOWN = 200;
/** How many quarantine entries a search looks through (never whole bodies: quarantine.search). */
const QUARANTINE_SEARCHED = 2_000;

export function createDeliveryLog(
  deliveries: Queue<Delivery>,
  runs: RunReader,
  history: HistorySearch,
  quarantine: Pick<Quarantine, 'search' | 'count'>,
): DeliveryLog {
  /** Deliveries no worker has routed yet, newest first: a backlog, read from their queue. */
  async function notRouted(q: string): Promise<DeliverySummary[]> {
    // BullMQ reads the range in each state: up to WAITING_SHOWN of each, the newest kept.
    const jobs = await deliveries.getJobs(['active', 'waiting', 'delayed'], 0, WAITING_SHOWN - 1);
    return jobs
      .sort((a, b) => b.timestamp - a.timestamp)
      .slice(0, WAITING_SHOWN)
      .flatMap((job) => {
        const read = readDelivery(job.data);
        if (!read.ok || (q !== '' && !matches(read.delivery, q))) return [];
        const { key, receivedAt, record } = read.delivery;
        return [
          { key, receivedAt, record: summarize(record), state: 'waiting' as const, runs: [] },
        ];
      });
  }

  async function view(
    job: Job<Delivery>,
    state: JobState | 'unknown',
    delivery: Delivery,
  ): Promise<DeliveryView> {
    const traceId = traceIdOf(job.opts.telemetry?.metadata);
    const base = {
      key: delivery.key,
      receivedAt: delivery.receivedAt,
      record: delivery.record,
      recordKept: true,
      ...(delivery.receipt ? { receipt: delivery.receipt } : {}),
      queuedAt: iso(job.timestamp),
      ...(job.processedOn ? { takenAt: iso(job.processedOn) } : {}),
      ...(state === 'completed' && job.finishedOn ? { routedAt: iso(job.finishedOn) } : {}),
      ...(traceId ? { traceId } : {}),
    };
    if (state === 'failed') return { ...base, state: 'failed', reason: job.failedReason, runs: [] };
    if (state !== 'completed') return { ...base, state: 'waiting', runs: [] };
    const routed = await runs.runsOf(job);
    // A run whose job is gone (retention, or a version that kept runs elsewhere): its outcome as
    // the history keeps it.
    const shown = routed.some((run) => run.state === 'unknown')
      ? withOutcomes(routed, await history.byKey(delivery.key))
      : routed;
    return { ...base, state: stateOf(shown), runs: shown };
  }

  /** A delivery whose job is gone, from its history entry and the run jobs still kept. */
  async function fromHistory(entry: HistoryEntry): Promise<DeliveryView> {
    const kept = await runs.runsOfRouting(entry.deliveryJobId, entry.handlers);
    return { ...summaryOf(entry), recordKept: false, runs: withOutcomes(kept, entry) };
  }

  return {
    async list({ q, state, offset, limit }) {
      const wanted = q?.trim() ?? '';
      if (state === 'quarantined') {
        const found = await quarantine.search(wanted, QUARANTINE_SEARCHED);
        return {
          deliveries: found
            .slice(offset, offset + limit)
            .map((entry) => ({ ...entry, state: 'quarantined' as const })),
          total: found.length,
          searched: Math.min(QUARANTINE_SEARCHED, await quarantine.count()),
        };
      }
      if (state === 'waiting') {
        const found = await notRouted(wanted);
        return {
          deliveries: found.slice(offset, offset + limit),
          total: found.length,
          searched: found.length,
        };
      }
      const page = await history.search({ q: wanted, state, offset, limit });
      return {
        deliveries: page.entries.map(summaryOf),
        total: page.total,
        searched: page.searched,
      };
    },

    async get(key) {
      const job = await findDelivery(deliveries, key);
      const read = job ? readDelivery(job.data) : undefined;
      if (job && read?.ok) return view(job, await job.getState(), read.delivery);
      const entry = await history.byKey(key);
      return entry ? fromHistory(entry) : undefined;
    },
  };
}

/** Runs whose job is gone, shown with the outcome the history keeps of them. */
function withOutcomes(runs: readonly RunView[], entry: HistoryEntry | undefined): RunView[] {
  return runs.map((run): RunView => {
    const outcome = entry?.outcomes[run.handler];
    return run.state !== 'unknown' || !outcome ? run : { ...run, ...outcomeOf(outcome) };
  });
}

/** A run's outcome as the history keeps it. */
function outcomeOf(outcome: HistoryEntry['outcomes'][string]) {
  return {
    state: outcome.state,
    finishedAt: outcome.at,
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    ...(outcome.result === undefined ? {} : { result: outcome.result }),
  };
}

function summaryOf(entry: HistoryEntry): DeliverySummary {
  return {
    key: entry.key,
    receivedAt: entry.receivedAt,
    record: entry.record,
    state: stateOfEntry(entry),
    runs: entry.handlers.map((handler): RunSummary => {
      const outcome = entry.outcomes[handler];
      return outcome ? { handler, ...outcomeOf(outcome) } : { handler, state: 'pending' };
    }),
  };
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
    record.feedback_id?.toString(),
    record.title,
    record.description,
    record.reporter?.email,
  ];
  return fields.some((field) => typeof field === 'string' && field.toLowerCase().includes(wanted));
}
