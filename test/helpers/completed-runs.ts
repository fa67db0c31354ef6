import type { RunQueues } from '../../src/runs/run-queues.js';

/** Handler runs completed: each is a job of its handler's queue from its first attempt. */
export async function countCompletedRuns(runQueues: Pick<RunQueues, 'all'> | undefined) {
  return countRuns(runQueues, 'completed');
}

/** Handler runs in one state, over every handler's queue. */
export async function countRuns(
  runQueues: Pick<RunQueues, 'all'> | undefined,
  state: 'completed' | 'failed' | 'waiting' | 'active' | 'delayed',
): Promise<number> {
  if (!runQueues) return 0;
  const counts = await Promise.all(
    (await runQueues.all()).map(async (queue) => (await queue.getJobCounts(state))[state] ?? 0),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}
