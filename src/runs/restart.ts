/**
 * The one way an operator starts a finished run again, for a retry and a run again alike
 * (docs/runs.md, "An operator's retry and run again"): back to waiting with its attempts counted
 * from zero, under a new life, which no success of the old life (a marker, or a worker still
 * holding it) matches. The run keeps its one id, so it is queued once however often asked.
 */
import type { FinishedStatus, Job } from 'bullmq';
import {
  completingAttempt,
  lifeOf,
  logAttempt,
  successKeyOf,
  type HandlerRunData,
} from './run-queues.js';
import type { RunReader } from './run-reader.js';

/**
 * Starts a finished job again with all of its attempts. (BullMQ's `retryJobs`, and bull-board's
 * retry, keep the count, which would leave a run that used up its attempts with none.)
 *
 * @returns false when the job is not in `from` (any more): someone else restarted it, or it moved on
 */
export async function startAfresh(job: Job<unknown>, from: FinishedStatus): Promise<boolean> {
  if ((await job.getState()) !== from) return false;
  if (successKeyOf(job)) {
    // BullMQ's public update; the worker reads the life when it takes the job. The time, and
    // more than the last: no other run of the delivery's key gets it (a delivery received again
    // after DEDUPE_TTL_SECONDS, started afresh too), so its success may be remembered past that.
    const life = Math.max(Date.now(), lifeOf(job) + 1);
    await job.updateData({ ...(job.data as HandlerRunData), life });
  }
  // The attempt that completed it is the job's completion, which starting again forgets.
  const completed = from === 'completed' ? completingAttempt(job) : undefined;
  if (completed) await logAttempt(job, completed);
  try {
    await job.retry(from, { resetAttemptsMade: true, resetAttemptsStarted: true });
  } catch (error) {
    // Restarted by someone else a moment ago.
    if ((await job.getState()) !== from) return false;
    throw error;
  }
  return true;
}

/**
 * `queued`: it will run again. `not completed`: it failed (retry it instead) or is under way.
 * `not found`: no such delivery is remembered, the handler did not take it, or its run is gone.
 */
export type RunAgainStatus = 'queued' | 'not completed' | 'not found';

export interface RunAgain {
  /** One handler's run of the delivery. */
  run(deliveryKey: string, handler: string): Promise<RunAgainStatus>;
  /** Every run of the delivery that completed; each handler with what became of it. */
  all(deliveryKey: string): Promise<{ handler: string; status: RunAgainStatus }[]>;
}

export function createRunAgain(reader: RunReader): RunAgain {
  async function runAgain(run: Awaited<ReturnType<RunReader['find']>>): Promise<RunAgainStatus> {
    // startAfresh checks the job's state, as it is now rather than when the run was read.
    const job = run && (await reader.jobOf(run));
    if (!job) return 'not found';
    return (await startAfresh(job, 'completed')) ? 'queued' : 'not completed';
  }

  return {
    run: async (deliveryKey, handler) => runAgain(await reader.find(deliveryKey, handler)),
    async all(deliveryKey) {
      const runs = await reader.runsOfKey(deliveryKey);
      return Promise.all(
        runs.map(async (run) => ({ handler: run.handler, status: await runAgain(run) })),
      );
    },
  };
}
