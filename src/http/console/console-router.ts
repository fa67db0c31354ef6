/**
 * The delivery console at /admin: its pages, its assets and its JSON API (/admin/api). The
 * admin router puts the token check and the cross-site defence in front of all of it, so every
 * POST here comes from the console's own pages (or from a script with the token).
 */
import express, { type Request, type Response, type Router } from 'express';
import { sendProblem } from '../send-problem.js';
import { readBulkSelection } from '../../runs/bulk-selection.js';
import type { DeliveryLog, DeliveryPage, DeliveryQuery } from '../../runs/delivery-log.js';
import { createAdminApi, planned } from './admin-api.js';
import {
  BULK_PATH,
  bulkChooseHandlerPage,
  bulkConfirmPage,
  bulkOffer,
  bulkProgressPage,
} from './bulk-pages.js';
import type { ConsoleSources } from './console-sources.js';
import { CONSOLE_CSS, CONSOLE_JS, FAVICON_SVG } from './assets.js';
import { readDeliveriesQuery } from './deliveries-query.js';
import { readGroupsQuery } from './groups-query.js';
import { methodRoutes } from './method-routes.js';
import {
  GROUP_SPANS,
  groupingOffPage,
  groupNotFoundPage,
  groupPage,
  groupsPage,
  similarSection,
  type GroupSpan,
} from './group-pages.js';
import { overviewPage, readDeadLetter, readOverview, readQuarantine } from './overview.js';
import type { Html } from './html.js';
import {
  deadLetterPage,
  notice,
  NOTICES,
  quarantineEntryPage,
  quarantinePage,
  type Notice,
} from './operations-pages.js';
import {
  CONSOLE_CSP,
  CONSOLE_PATH,
  deliveriesPage,
  deliveryPage,
  notFoundPage,
  runAgainPage,
} from './pages.js';

export function createConsoleRouter(sources: ConsoleSources): Router {
  const { deliveryLog, quarantine, deliveries, deadLetter, runs, runAgain, bulk, similarGroups } =
    sources;
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const router = express.Router();
  router.use('/api', createAdminApi(sources));
  // Another method on a page answers 405 with Allow, as the API does, not 404.
  const { get, post } = methodRoutes(router);

  get('/assets/console.css', (_req, res) => asset(res, 'text/css', CONSOLE_CSS));
  get('/assets/console.js', (_req, res) => asset(res, 'text/javascript', CONSOLE_JS));
  get('/assets/favicon.svg', (_req, res) => asset(res, 'image/svg+xml', FAVICON_SVG));

  get('/', async (_req, res) => {
    page(res, 200, overviewPage(await readOverview(sources)));
  });

  get('/deliveries', async (req, res) => {
    const check = readDeliveriesQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const found = await deliveryLog.list(check.query);
    const failedRuns = await holdsFailedRuns(deliveryLog, check.query, found);
    page(res, 200, deliveriesPage(found, check.query, bulkOffer(check.query, failedRuns)));
  });

  // A bulk action: choose (run-again's handler), confirm with the count, then follow it.
  get('/deliveries/bulk', async (req, res) => {
    const fields = req.query as Record<string, unknown>;
    const choosing = fields.action === 'run-again' && oneValue(fields.handler) === undefined;
    // Without its handler yet, the rest of the selection is checked as it is.
    const check = readBulkSelection(choosing ? { ...fields, action: 'retry' } : fields);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    if (choosing) {
      const selection = { ...check.selection, action: 'run-again' as const };
      return page(res, 200, bulkChooseHandlerPage(selection, await sources.handlerNames()));
    }
    const plan = await planned(() => bulk.plan(check.selection), res);
    if (plan) page(res, 200, bulkConfirmPage(plan, oneValue(fields.since)));
  });

  post('/deliveries/bulk', form, async (req, res) => {
    const fields = (req.body ?? {}) as Record<string, unknown>;
    const check = readBulkSelection(fields);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    if (fields.confirm !== 'yes') {
      const { confirm: _confirm, ...rest } = fields;
      const query = new URLSearchParams(rest as Record<string, string>).toString();
      return res.redirect(303, `${BULK_PATH}?${query}`);
    }
    const progress = await planned(() => bulk.start(check.selection), res);
    if (progress) res.redirect(303, `${BULK_PATH}/${progress.id}`);
  });

  get('/deliveries/bulk/:id', async (req, res) => {
    const progress = await bulk.progress(req.params.id);
    if (progress) page(res, 200, bulkProgressPage(progress));
    else page(res, 404, notFoundPage('bulk action', req.params.id));
  });

  get('/deliveries/:key', async (req, res) => {
    const { key } = req.params;
    const delivery = await deliveryLog.get(key);
    if (!delivery) return page(res, 404, notFoundPage('delivery', key));
    const project = delivery.record.project_id ?? undefined;
    const similar = similarGroups
      ? similarSection(key, {
          grouping: 'on',
          facts: await similarGroups.ofDelivery(key, project),
        })
      : similarSection(key, { grouping: 'off' });
    page(
      res,
      200,
      deliveryPage(delivery, notice(noticeOf(req)), sources.traceUrlTemplate, similar),
    );
  });

  post('/deliveries/:key/detach', async (req, res) => {
    const { key } = req.params;
    if (!similarGroups) return page(res, 404, groupingOffPage());
    // Its project says where grouping keeps it; a delivery no longer kept is looked for.
    const delivery = await deliveryLog.get(key);
    const outcome = await similarGroups.detach(key, delivery?.record.project_id ?? undefined);
    afterAction(
      res,
      `deliveries/${encodeURIComponent(key)}`,
      outcome === 'not-found' ? 'gone' : outcome,
    );
  });

  get('/groups', async (req, res) => {
    if (!similarGroups) return page(res, 200, groupingOffPage());
    // The API's parameters and answers to them; the page offers two of its spans.
    const check = readGroupsQuery(req.query, GROUPS_SHOWN);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const { since, project, limit } = check.query;
    if (!Object.hasOwn(GROUP_SPANS, since)) {
      return sendProblem(
        res,
        'BAD_REQUEST',
        `since: expected one of ${Object.keys(GROUP_SPANS).join(', ')}`,
      );
    }
    const span = since as GroupSpan;
    const groups = await similarGroups.list({
      sinceMs: Date.now() - GROUP_SPANS[span].ms,
      project,
      limit,
    });
    page(res, 200, groupsPage(groups, span, project));
  });

  get('/groups/:id', async (req, res) => {
    if (!similarGroups) return page(res, 200, groupingOffPage());
    const group = await similarGroups.get(req.params.id);
    if (group) page(res, 200, groupPage(group));
    else page(res, 404, groupNotFoundPage(req.params.id));
  });

  post('/deliveries/:key/runs/:handler/retry', async (req, res) => {
    const { key, handler } = req.params;
    const run = await runs.find(key, handler);
    const retried = run?.canRetry === true && (await deadLetter.retry(run.runId));
    afterAction(res, `deliveries/${encodeURIComponent(key)}`, retried ? 'retried' : 'gone');
  });

  // Running a completed run again may repeat its effects: the page asks, then POSTs `confirm`.
  get('/deliveries/:key/run-again', async (req, res) => {
    const delivery = await deliveryLog.get(req.params.key);
    if (!delivery) return page(res, 404, notFoundPage('delivery', req.params.key));
    page(res, 200, runAgainPage(delivery, oneValue(req.query.handler)));
  });

  post('/deliveries/:key/run-again', form, async (req, res) => {
    const { key } = req.params;
    const fields = (req.body ?? {}) as Record<string, unknown>;
    const handler = oneValue(fields.handler);
    if (fields.confirm !== 'yes') {
      const query = handler ? `?handler=${encodeURIComponent(handler)}` : '';
      return res.redirect(
        303,
        `${CONSOLE_PATH}/deliveries/${encodeURIComponent(key)}/run-again${query}`,
      );
    }
    const statuses = handler
      ? [await runAgain.run(key, handler)]
      : (await runAgain.all(key)).map(({ status }) => status);
    const done: Notice = statuses.includes('queued')
      ? 'queued-again'
      : statuses.includes('not completed')
        ? 'not-completed'
        : 'gone';
    afterAction(res, `deliveries/${encodeURIComponent(key)}`, done);
  });

  get('/quarantine', async (req, res) => {
    const { entries, total } = await readQuarantine(sources);
    page(res, 200, quarantinePage(entries, total, noticeOf(req)));
  });

  get('/quarantine/:id', async (req, res) => {
    const entry = await quarantine.get(req.params.id);
    if (entry) page(res, 200, quarantineEntryPage(entry));
    else page(res, 404, notFoundPage('quarantine entry', req.params.id));
  });

  post('/quarantine/:id/replay', async (req, res) => {
    const { status } = await quarantine.replay(req.params.id, deliveries);
    const done: Notice =
      status === 'not_found' ? 'gone' : status === 'invalid' ? 'still-invalid' : 'replayed';
    afterAction(res, 'quarantine', done);
  });

  post('/quarantine/:id/delete', async (req, res) => {
    afterAction(res, 'quarantine', (await quarantine.delete(req.params.id)) ? 'deleted' : 'gone');
  });

  get('/dead-letter', async (req, res) => {
    const { groups, total } = await readDeadLetter(sources);
    page(res, 200, deadLetterPage(groups, total, noticeOf(req)));
  });

  post('/dead-letter/retry', form, async (req, res) => {
    const { handler, reason } = (req.body ?? {}) as Record<string, unknown>;
    if (typeof handler !== 'string' || typeof reason !== 'string') {
      return sendProblem(res, 'BAD_REQUEST', 'handler and reason: expected one value each');
    }
    const retried = await deadLetter.retryGroup({ handler, reason });
    afterAction(res, 'dead-letter', retried > 0 ? 'retried' : 'gone');
  });

  post('/dead-letter/:id/retry', async (req, res) => {
    afterAction(res, 'dead-letter', (await deadLetter.retry(req.params.id)) ? 'retried' : 'gone');
  });

  return router;
}

/** Groups on the groups page: the fastest-growing hundred say what is going on. */
const GROUPS_SHOWN = 100;

/**
 * Whether a search's result holds a delivery with a failed run, so that retrying them does
 * something. Read from the page when the page is the whole result; else one more search, under
 * the `failed` filter, for one delivery.
 */
async function holdsFailedRuns(
  deliveryLog: DeliveryLog,
  query: DeliveryQuery,
  found: DeliveryPage,
): Promise<boolean> {
  if (query.state === 'failed') return found.total > 0;
  if (query.state !== undefined || found.total === 0) return false;
  if (query.offset === 0 && found.deliveries.length >= found.total) {
    return found.deliveries.some((delivery) => delivery.state === 'failed');
  }
  const failed = await deliveryLog.list({ q: query.q, state: 'failed', offset: 0, limit: 1 });
  return failed.total > 0;
}

/** After a form's POST, back to its page with what happened (303: the browser GETs it). */
function afterAction(res: Response, where: string, done: Notice): void {
  res.redirect(303, `${CONSOLE_PATH}/${where}?done=${done}`);
}

/** A query or form field given once and not empty. */
function oneValue(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function noticeOf(req: Request): Notice | undefined {
  const done = req.query.done;
  return typeof done === 'string' && done in NOTICES ? (done as Notice) : undefined;
}

function page(res: Response, status: number, body: Html): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': CONSOLE_CSP,
      'Cache-Control': 'no-store',
      'Referrer-Policy': 'no-referrer',
      'X-Content-Type-Options': 'nosniff',
    })
    .send(body.markup);
}

function asset(res: Response, type: string, text: string): void {
  res
    .set({
      'Content-Type': `${type}; charset=utf-8`,
      'Content-Security-Policy': CONSOLE_CSP,
      'Cache-Control': 'private, max-age=300',
      'X-Content-Type-Options': 'nosniff',
    })
    .send(text);
}
