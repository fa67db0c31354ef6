/**
 * The admin side: the delivery console at /admin (console/), and bull-board at /admin/queues:
 * the deliveries queue and each handler's runs queue, the dead letter (failed runs). Mounted only
 * when ADMIN_TOKEN is set, and then only for requests that carry it:
 * as a Bearer token, or as the password of HTTP basic auth so that a browser can log in. A browser
 * sends basic-auth credentials with any request to the site, including one that a page elsewhere
 * makes it send, so state changes are taken only from the dashboard's own pages (see
 * refuseCrossSite). Deliveries enter only through the signed route: no job can be added or have
 * its data replaced from here. The deliveries queue is read-only, and on runs only the actions
 * that keep their promises are taken (dashboard-actions.ts). bull-board's page loads nothing
 * from elsewhere and links back to the console (board-page.ts).
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { createConsoleRouter } from './console/console-router.js';
import type { ConsoleSources } from './console/console-sources.js';
import { CONSOLE_PATH } from './console/pages.js';
import { CONSOLE_REQUESTS_AT_ONCE, createRequestGate } from './console/request-gate.js';
import type { OutageReporter } from '../queue/outage-reporter.js';
import { requireToken } from './admin-token.js';
import { BOARD_UI_CONFIG, keepBoardOnThisSite } from './board-page.js';
import { allowListedActions } from './dashboard-actions.js';
import { sendProblem } from './send-problem.js';

export const ADMIN_PATH = '/admin/queues';

/**
 * A runs queue's adapter: failed runs can be retried, completed ones not (the console's "run
 * again" starts them afresh). bull-board's UI follows these; its server does not check
 * `allowCompletedRetries`, so allowListedActions does. Not in the adapter's declared options
 * type, though the base adapter reads it (bull-board's own Bull adapter sets it).
 */
const RUN_QUEUE_OPTIONS: { allowRetries: boolean; allowCompletedRetries: boolean } = {
  allowRetries: true,
  allowCompletedRetries: false,
};

export interface AdminDashboardOptions {
  readonly token: string;
  /** The deliveries queue: shown read-only, since each job is a delivery already acknowledged. */
  readonly deliveries: Queue;
  /**
   * Every handler's runs queue, each shown with the actions that keep runs' promises (see
   * dashboard-actions.ts). Known only as workers announce their handlers, so asked again (at
   * most every QUEUES_FRESH_MS) and at each single-run retry.
   */
  runQueues(): Promise<readonly Queue[]>;
  /** What the delivery console at /admin reads and acts on. */
  readonly deliveryConsole: ConsoleSources;
  /**
   * Turns the console's errors that mean its Redis is away into QueueUnavailableError (503),
   * logging each outage once. Without it every error of the console's is a 500.
   */
  readonly outages?: OutageReporter | undefined;
}

export function createAdminRouter({
  token,
  deliveries,
  runQueues,
  deliveryConsole,
  outages,
}: AdminDashboardOptions): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(ADMIN_PATH);
  const board = createBullBoard({
    queues: [new BullMQAdapter(deliveries, { readOnlyMode: true })],
    serverAdapter,
    options: { uiConfig: BOARD_UI_CONFIG },
  });
  const shown = new Set<string>();
  let freshUntil = 0;
  /** Adds the queues of handlers announced since the last look. */
  const showNewQueues = async (_req: Request, _res: Response, next: NextFunction) => {
    if (Date.now() < freshUntil) return next();
    try {
      for (const queue of await runQueues()) {
        if (shown.has(queue.name)) continue;
        board.addQueue(new BullMQAdapter(queue, RUN_QUEUE_OPTIONS));
        shown.add(queue.name);
      }
      freshUntil = Date.now() + QUEUES_FRESH_MS;
      next();
    } catch (error) {
      next(error);
    }
  };
  const router = express.Router();
  // bull-board's /admin/queues too: every operator's request waits for its turn here.
  router.use(
    CONSOLE_PATH,
    refuseCrossSite,
    requireToken(token),
    createRequestGate(CONSOLE_REQUESTS_AT_ONCE),
  );
  router.post(`${ADMIN_PATH}/api/queues/:queueName/add`, refuseUnsignedJobs);
  router.patch(`${ADMIN_PATH}/api/queues/:queueName/:jobId/update-data`, refuseUnsignedJobs);
  router.use(ADMIN_PATH, allowListedActions(runQueues));
  router.use(ADMIN_PATH, keepBoardOnThisSite, showNewQueues, serverAdapter.getRouter() as Router);
  router.use(CONSOLE_PATH, createConsoleRouter(deliveryConsole));
  if (outages) {
    router.use(CONSOLE_PATH, (error: unknown, _req: Request, _res: Response, next: NextFunction) =>
      next(outages(error)),
    );
  }
  return router;
}

/** How long the list of queues bull-board shows is taken as it is. */
const QUEUES_FRESH_MS = 5_000;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a state-changing request that a browser says comes from another site, whatever
 * credentials it carries: by `Sec-Fetch-Site` where the browser sends it (every current one
 * does), else by an `Origin` that is not this host. A request with neither comes from no browser
 * (curl, a script), which cannot be made to send it by a page elsewhere.
 */
export function refuseCrossSite(req: Request, res: Response, next: NextFunction): void {
  if (SAFE_METHODS.has(req.method)) return next();
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  const crossSite =
    site !== undefined
      ? site !== 'same-origin' && site !== 'none'
      : origin !== undefined && !sameHost(origin, req.headers.host);
  if (!crossSite) return next();
  sendProblem(
    res,
    'CROSS_SITE_REQUEST',
    'State changes are taken only from this site’s own pages.',
  );
}

function sameHost(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}

function refuseUnsignedJobs(_req: Request, res: Response): void {
  sendProblem(
    res,
    'JOB_CHANGE_REFUSED',
    'Jobs are not added or edited here: deliveries come only through the signed webhook route, `feedback-receiver send` and quarantine replay.',
  );
}
