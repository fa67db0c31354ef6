/**
 * The one reader of runs (docs/runs.md): what became of each handler's run of a delivery, read
 * from the queues, for the console, its API, the CLI, the operators' actions and the public
 * exports; the worker that makes the attempts is not asked.
 */
import type { Job, Queue } from 'bullmq';
import { findDelivery } from '../queue/deliveries-queue.js';
import type { Delivery } from '../webhooks/delivery.js';
import {
  readAttempts,
  runJobId,
  type AttemptRecord,
  type HandlerRunData,
  type RoutingResult,
  type RunQueues,
} from './run-queues.js';

/**
 * `pending`: waiting, delayed or under way. `unknown`: its job is no longer kept (retention), or
 * the delivery was routed by a version that kept runs elsewhere.
 */
export type RunState = 'pending' | 'completed' | 'failed' | 'unknown';

export interface RunView {
  readonly handler: string;
  /** The id of the run's job in its handler's queue: what `deliveries retry` takes. */
  readonly runId: string;
  readonly state: RunState;
  /** What the handler returned (auto-triage: the rules that matched and the PATCH). */
  readonly result?: unknown;
  /** Why it failed for good. */
  readonly reason?: string;
  /** How many attempts it has made since it last started afresh. */
  readonly attempts?: number;
  /** Each attempt, oldest first (earlier lives too): its start, duration, outcome and error. */
  readonly history: readonly AttemptRecord[];
  /** When its last attempt started, ISO 8601 UTC. */
  readonly startedAt?: string;
  /** When it finished, ISO 8601 UTC. */
  readonly finishedAt?: string;
  /** It failed for good: a retry starts it afresh. */
  readonly canRetry: boolean;
  /** It completed: it may run again, on an operator's word. */
  readonly canRunAgain: boolean;
}

export interface RunReader {
  /**
   * The runs of a delivery's job once it is routed (none before): the ones routing added, and
   * any added since.
   */
  runsOf(deliveryJob: Job<Delivery>): Promise<RunView[]>;
  /**
   * The runs of a delivery job, by its id, after that job is gone: the ones its routing added
   * (`unknown` for runs gone too), and any added since that are kept.
   */
  runsOfRouting(deliveryJobId: string, handlers: readonly string[]): Promise<RunView[]>;
  /** The runs of the delivery with this key, while it is remembered and its job kept. */
  runsOfKey(deliveryKey: string): Promise<RunView[]>;
  /** One handler's run of the delivery with this key, once it is routed. */
  find(deliveryKey: string, handler: string): Promise<RunView | undefined>;
  /** The job of a run, for the operators' actions. */
  jobOf(run: Pick<RunView, 'runId' | 'handler'>): Promise<Job<HandlerRunData> | undefined>;
}

export function createRunReader(
  deliveries: Queue<Delivery>,
  runQueues: Pick<RunQueues, 'of' | 'handlers'>,
): RunReader {
  async function view(handler: string, runId: string, job?: Job<HandlerRunData>): Promise<RunView> {
    const queue = runQueues.of(handler);
    job ??= await queue.getJob(runId);
    if (!job) return { handler, runId, state: 'unknown', history: [], ...cannot };
    const jobState = await job.getState();
    // The state first: a finished job is final, so what is read after it is complete.
    const finished = jobState === 'completed' || jobState === 'failed';
    const read = finished ? ((await queue.getJob(runId)) ?? job) : job;
    const history = await readAttempts(queue, read, jobState === 'completed');
    return {
      handler,
      runId,
      state: finished ? jobState : 'pending',
      attempts: read.attemptsMade,
      history,
      ...(jobState === 'completed' ? { result: read.returnvalue } : {}),
      ...(jobState === 'failed' ? { reason: read.failedReason } : {}),
      ...(read.processedOn ? { startedAt: iso(read.processedOn) } : {}),
      ...(finished && read.finishedOn ? { finishedAt: iso(read.finishedOn) } : {}),
      canRetry: jobState === 'failed',
      canRunAgain: jobState === 'completed',
    };
  }

  /** The runs of a delivery job: routing's, in its order, then any other handler's kept. */
  async function runsOfJob(deliveryJobId: string, routed: readonly string[]): Promise<RunView[]> {
    const others = (await runQueues.handlers()).filter((handler) => !routed.includes(handler));
    const added = await Promise.all(
      others.map(async (handler) => {
        const runId = runJobId(deliveryJobId, handler);
        const job = await runQueues.of(handler).getJob(runId);
        return job ? [await view(handler, runId, job)] : [];
      }),
    );
    const mine = await Promise.all(
      routed.map((handler) => view(handler, runJobId(deliveryJobId, handler))),
    );
    return [...mine, ...added.flat()];
  }

  const reader: RunReader = {
    async runsOf(deliveryJob) {
      // Only a routed delivery's job has a return value.
      const routing = deliveryJob.returnvalue as RoutingResult | null | undefined;
      return routing ? runsOfJob(deliveryJob.id!, routing.handlers) : [];
    },
    runsOfRouting: runsOfJob,
    async runsOfKey(deliveryKey) {
      const deliveryJob = await findDelivery(deliveries, deliveryKey);
      return deliveryJob ? reader.runsOf(deliveryJob) : [];
    },
    find: async (deliveryKey, handler) =>
      (await reader.runsOfKey(deliveryKey)).find((run) => run.handler === handler),
    jobOf: async ({ runId, handler }) => runQueues.of(handler).getJob(runId),
  };
  return reader;
}

const cannot = { canRetry: false, canRunAgain: false } as const;

/** A BullMQ time (milliseconds) as ISO 8601 UTC. */
export function iso(time: number): string {
  return new Date(time).toISOString();
}
