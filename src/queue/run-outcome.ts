/**
 * Where a handler's run of a delivery stands, read from the queues: the routing job records the
 * first attempt, and a run that needed more has a `handler-runs` job of its own.
 */
import type { Queue } from 'bullmq';
import { jobIdFor, type Delivery } from '../webhooks/delivery.js';
import { handlerRunJobId, type HandlerRunData } from './handler-runs-queue.js';

export type RunOutcome =
  | { readonly state: 'completed'; readonly result: unknown }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'pending' };

/** The part of the routing job's return value read here (see RoutingResult in the worker). */
interface RoutedRuns {
  readonly runs?: Readonly<Record<string, { outcome: string; result?: unknown }>>;
}

export async function findRunOutcome(
  deliveries: Queue<Delivery>,
  handlerRuns: Queue<HandlerRunData>,
  deliveryKey: string,
  handlerName: string,
): Promise<RunOutcome> {
  // The state first: a finished job is final, so what is read after it is complete.
  const routingId = jobIdFor(deliveryKey);
  if ((await deliveries.getJobState(routingId)) !== 'completed') return { state: 'pending' };
  const routing = await deliveries.getJob(routingId);
  const run = (routing?.returnvalue as RoutedRuns | undefined)?.runs?.[handlerName];
  if (run?.outcome === 'completed') return { state: 'completed', result: run.result };

  const runId = handlerRunJobId(deliveryKey, handlerName);
  const state = await handlerRuns.getJobState(runId);
  if (state !== 'completed' && state !== 'failed') return { state: 'pending' };
  const job = await handlerRuns.getJob(runId);
  return state === 'completed'
    ? { state, result: job?.returnvalue }
    : { state, reason: job?.failedReason ?? '' };
}
