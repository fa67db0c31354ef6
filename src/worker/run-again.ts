/**
 * Runs a handler again on a delivery it already handled: the console's "run again", for when an
 * operator wants the effect once more (the handler was fixed after it did the wrong thing, say).
 * Effects may happen twice, which is why the console asks first.
 *
 * Only a run that completed is run again; a failed one is retried from the dead letter, and one
 * still under way is left alone. Its `handler-runs` job goes back to waiting, with all of its
 * handler's attempts; a run that completed while routing has no job, so one is created under the
 * run's id. Either way the run keeps its one id, so it is queued once however often an operator
 * asks, and its success marker is removed first, so that a worker that crashes during the new
 * run does not mistake it for done (see completion-ledger.ts).
 */
import type { Queue } from 'bullmq';
import { findDelivery, type JobRetention } from '../queue/deliveries-queue.js';
import {
  addHandlerRun,
  handlerRunJobId,
  startingAfresh,
  type HandlerRunData,
} from '../queue/handler-runs-queue.js';
import type { RedisConnection } from '../queue/redis.js';
import { readDelivery, type Delivery } from '../webhooks/delivery.js';
import { succeededMarkerKey } from './completion-ledger.js';
import { DEFAULT_ATTEMPTS } from './handler.js';
import type { RoutingResult } from './runs.js';

/**
 * `queued`: it will run again. `not completed`: it failed (retry it instead) or is under way.
 * `not found`: no such delivery is kept, the handler did not take it, or its record is gone.
 */
export type RunAgainStatus = 'queued' | 'not completed' | 'not found';

export interface RunAgain {
  /** One handler's run of the delivery. */
  run(deliveryKey: string, handler: string): Promise<RunAgainStatus>;
  /** Every run of the delivery that completed; each handler with what became of it. */
  all(deliveryKey: string): Promise<{ handler: string; status: RunAgainStatus }[]>;
}

export interface RunAgainOptions {
  readonly deliveries: Queue<Delivery>;
  readonly handlerRuns: Queue<HandlerRunData>;
  /** The connection of the queues, for the runs' success markers. */
  readonly connection: RedisConnection;
  readonly prefix: string;
  /** See DEDUPE_TTL_SECONDS. */
  readonly dedupeTtlSeconds: number;
  /** How long the run's job is kept once it ends, as the worker keeps them. */
  readonly retention?: JobRetention;
}

export function createRunAgain(options: RunAgainOptions): RunAgain {
  const { deliveries, handlerRuns, connection, prefix } = options;

  /** The delivery and how its routing went, when it was routed and is still kept. */
  async function routed(deliveryKey: string) {
    const job = await findDelivery(deliveries, deliveryKey);
    if (!job || (await job.getState()) !== 'completed') return undefined;
    const read = readDelivery(job.data);
    const routing = job.returnvalue as RoutingResult | undefined;
    return read.ok && routing ? { delivery: read.delivery, routing } : undefined;
  }

  async function runAgain(
    delivery: Delivery,
    routing: RoutingResult,
    handler: string,
  ): Promise<RunAgainStatus> {
    if (!routing.handlers.includes(handler)) return 'not found';
    const runId = handlerRunJobId(delivery.key, handler);
    const job = await handlerRuns.getJob(runId);
    if (job) {
      if ((await job.getState()) !== 'completed') return 'not completed';
      await connection.del(succeededMarkerKey(prefix, runId));
      await job.updateData(startingAfresh({ ...job.data, delivery }));
      try {
        await job.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      } catch (error) {
        // Someone else ran it again a moment ago.
        if ((await job.getState()) !== 'completed') return 'not completed';
        throw error;
      }
      return 'queued';
    }
    const summary = routing.runs[handler];
    // Without a job, only the routing's record tells that the run completed.
    if (summary?.outcome !== 'completed') return 'not found';
    await connection.del(succeededMarkerKey(prefix, runId));
    // A job of this id that retention removed may have left its deduplication marker behind.
    await handlerRuns.removeDeduplicationKey(runId);
    await addHandlerRun(
      handlerRuns,
      { delivery, handler, attempts: summary.attempt?.of ?? DEFAULT_ATTEMPTS },
      {
        dedupeTtlSeconds: options.dedupeTtlSeconds,
        ...(options.retention ? { retention: options.retention } : {}),
      },
    );
    return 'queued';
  }

  return {
    async run(deliveryKey, handler) {
      const found = await routed(deliveryKey);
      return found ? runAgain(found.delivery, found.routing, handler) : 'not found';
    },
    async all(deliveryKey) {
      const found = await routed(deliveryKey);
      if (!found) return [];
      const { delivery, routing } = found;
      return Promise.all(
        routing.handlers.map(async (handler) => ({
          handler,
          status: await runAgain(delivery, routing, handler),
        })),
      );
    },
  };
}
