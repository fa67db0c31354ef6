/**
 * Which of bull-board's state changes the dashboard takes: only those that keep the promises made
 * to senders and about runs. bull-board's own options mark the deliveries queue read-only and hide
 * retrying a completed run, but its server checks only `readOnlyMode`, so every other action is
 * refused here, before bull-board sees it:
 *
 * - Empty, Clean, Remove and Obliterate drop acknowledged deliveries or runs, or the keys that
 *   make a sender's resend a duplicate;
 * - Promote, "release" of a rate limit, and a changed delay or priority skip a run's backoff or
 *   the API's rate-limit wait;
 * - Retry of a completed run skips what the console's "run again" does (it starts afresh);
 * - adding a job or replacing its data forges a delivery (see admin-dashboard.ts);
 * - a global rate limit would not be the one asked for: the handlers' workers have a limiter
 *   (the handler's `rateLimit`, or RUNS_LIMITER for the API's rate-limit waits), and BullMQ counts
 *   a global limit's jobs over the worker limiter's duration, not over its own (1 a minute became
 *   1 a second); a handler's `rateLimit` is the way to limit it.
 *
 * Taken: pause and resume (all queues, or one handler's), a handler's global concurrency, and
 * retrying failed runs (one, or all of a queue's).
 */
import type { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { sendProblem } from './send-problem.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Where bull-board's API is mounted, relative to the dashboard's path. */
export const DASHBOARD_API = '/api/queues';

/**
 * A router for bull-board's API paths that lets through the actions listed above, to bull-board
 * (`next('router')`), and refuses every other state change with 403 DASHBOARD_ACTION_REFUSED.
 *
 * @param runQueues every handler's runs queue, asked at each single-run retry.
 */
export function allowListedActions(runQueues: () => Promise<readonly Queue[]>): Router {
  const router = express.Router();
  const take = (_req: Request, _res: Response, next: NextFunction) => next('router');
  router.put(`${DASHBOARD_API}/pause`, take);
  router.put(`${DASHBOARD_API}/resume`, take);
  router.put(`${DASHBOARD_API}/:queueName/pause`, take);
  router.put(`${DASHBOARD_API}/:queueName/resume`, take);
  router.put(`${DASHBOARD_API}/:queueName/concurrency`, take);
  router.put(`${DASHBOARD_API}/:queueName/retry/failed`, take);
  router.put(`${DASHBOARD_API}/:queueName/:jobId/retry`, async (req, res, next) => {
    const queue = (await runQueues()).find((candidate) => candidate.name === req.params.queueName);
    // Not a runs queue: the deliveries queue, which bull-board refuses as read-only, or none.
    if (!queue) return next('router');
    const state = await queue.getJobState(String(req.params.jobId));
    if (state === 'failed' || state === 'unknown') return next('router');
    refuse(
      res,
      `Only a failed run is retried here; this one is ${state}. Run a completed run again from the console (/admin), which starts it afresh.`,
    );
  });
  router.use((req, res, next) => {
    if (SAFE_METHODS.has(req.method)) return next('router');
    refuse(
      res,
      'The dashboard takes pause, resume, concurrency and retrying failed runs only: the rest could drop an acknowledged delivery or skip a run’s wait, and BullMQ would count a global rate limit over the workers’ limiter, whatever its duration: give the handler a rateLimit instead.',
    );
  });
  return router;
}

function refuse(res: Response, detail: string): void {
  sendProblem(res, 'DASHBOARD_ACTION_REFUSED', detail);
}
