import type { Queue } from 'bullmq';
import type { RoutingResult } from '../../src/worker/runs.js';

/**
 * Handler runs completed: on their first attempt, recorded by their delivery's routing job, and
 * as `handler-runs` jobs of their own.
 */
export async function countCompletedRuns(deliveries: Queue, handlerRuns: Queue | undefined) {
  const routed = await deliveries.getCompleted(0, -1);
  const firstAttempts = routed
    .flatMap((job) => Object.values((job.returnvalue as RoutingResult | null)?.runs ?? {}))
    .filter((run) => run.outcome === 'completed').length;
  return firstAttempts + ((await handlerRuns?.getCompletedCount()) ?? 0);
}
