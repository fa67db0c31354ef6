import type { Queue } from 'bullmq';

/** Handler runs completed: each is a `handler-runs` job from its first attempt. */
export async function countCompletedRuns(handlerRuns: Queue | undefined) {
  return (await handlerRuns?.getCompletedCount()) ?? 0;
}
