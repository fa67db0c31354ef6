/**
 * The console's JSON API under /admin/api, for its pages and for scripts alike (the same token;
 * docs/admin-api.md lists every endpoint with an example answer). State changes are POSTs.
 */
import express, { type Router } from 'express';
import { z } from 'zod';
import { BulkBusyError, BulkSelectionError } from '../../runs/bulk-actions.js';
import { readBulkSelection } from '../../runs/bulk-selection.js';
import { sendProblem } from '../send-problem.js';
import { jsonBody } from './json-body.js';
import { methodRoutes } from './method-routes.js';
import { CONSOLE_PATH } from './pages.js';
import type { ConsoleSources } from './console-sources.js';
import { readDeliveriesQuery } from './deliveries-query.js';
import { readGroupsQuery } from './groups-query.js';
import { readDeadLetter, readOverview, readQuarantine } from './overview.js';

const GroupSchema = z.strictObject({ handler: z.string(), reason: z.string() });

/**
 * For a list that takes no parameter: one it is given answers 400 naming it, as the lists that
 * take some answer theirs. `/quarantine?limit=5` answered all 500 as if it had been obeyed.
 */
const takesNoParameters: express.RequestHandler = (req, res, next) => {
  const [name] = Object.keys(req.query);
  if (name === undefined) return next();
  sendProblem(res, 'BAD_REQUEST', `${name}: unknown parameter; this endpoint takes none`);
};

export function createAdminApi(sources: ConsoleSources): Router {
  const { deliveryLog, quarantine, deliveries, deadLetter, runAgain, bulk, similarGroups } =
    sources;
  const api = express.Router();
  // Another method on a path answers 405 with Allow, not 404.
  const { get, post } = methodRoutes(api);

  get('/overview', takesNoParameters, async (_req, res) => {
    res.json(await readOverview(sources));
  });

  get('/deliveries', async (req, res) => {
    const check = readDeliveriesQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const page = await deliveryLog.list(check.query);
    res.json({ ...page, offset: check.query.offset, limit: check.query.limit });
  });

  // A bulk action: its plan (how many runs it would queue), its start, and its progress.
  post('/deliveries/bulk/plan', jsonBody, async (req, res) => {
    const check = readBulkSelection(jsonFields(req.body));
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const plan = await planned(() => bulk.plan(check.selection), res);
    if (plan) res.json(plan);
  });

  post('/deliveries/bulk', jsonBody, async (req, res) => {
    const check = readBulkSelection(jsonFields(req.body));
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const progress = await planned(() => bulk.start(check.selection), res);
    if (!progress) return;
    res.status(202).location(`${CONSOLE_PATH}/api/deliveries/bulk/${progress.id}`).json(progress);
  });

  get('/deliveries/bulk/:id', async (req, res) => {
    const progress = await bulk.progress(req.params.id);
    if (!progress) return notFound(res, 'bulk action');
    res.json(progress);
  });

  get('/deliveries/:key', async (req, res) => {
    const delivery = await deliveryLog.get(req.params.key);
    if (!delivery) return notFound(res, 'delivery');
    const project = delivery.record.project_id;
    const similar = await similarGroups?.ofDelivery(
      req.params.key,
      typeof project === 'string' ? project : undefined,
    );
    res.json(similar ? { ...delivery, similar } : delivery);
  });

  // Groups of similar feedback: with SIMILAR=off the list is empty and the rest answers 404.
  get('/groups', async (req, res) => {
    const check = readGroupsQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const { since, sinceMs, project, limit } = check.query;
    const groups = similarGroups
      ? await similarGroups.list({ sinceMs: Date.now() - sinceMs, project, limit })
      : [];
    res.json({ since, ...(project === undefined ? {} : { project }), groups });
  });

  get('/groups/:id', async (req, res) => {
    const group = await similarGroups?.get(req.params.id);
    if (!group) return notFound(res, 'group');
    res.json(group);
  });

  post('/deliveries/:key/detach', async (req, res) => {
    const key = req.params.key;
    // Its project says where grouping keeps it (looked for otherwise, among a bounded few).
    const project = similarGroups
      ? ((await deliveryLog.get(key))?.record.project_id ?? undefined)
      : undefined;
    const outcome = similarGroups ? await similarGroups.detach(key, project) : 'not-found';
    if (outcome === 'not-found') {
      return sendProblem(res, 'NOT_FOUND', 'No grouped delivery with this key is kept.');
    }
    const similar = await similarGroups!.ofDelivery(key, project);
    res.json({ deliveryKey: key, status: outcome, group: similar?.group });
  });

  post('/deliveries/:key/runs/:handler/run-again', async (req, res) => {
    const { key, handler } = req.params;
    const status = await runAgain.run(key, handler);
    if (status === 'not found') {
      return sendProblem(res, 'NOT_FOUND', 'No run of this handler on this delivery is kept.');
    }
    if (status === 'not completed') {
      return sendProblem(
        res,
        'RUN_NOT_COMPLETED',
        'Only a run that completed runs again: retry a failed run, or wait for one under way.',
      );
    }
    res.json({ deliveryKey: key, handler, status });
  });

  post('/deliveries/:key/run-again', async (req, res) => {
    const runs = await runAgain.all(req.params.key);
    if (runs.length === 0) {
      return sendProblem(
        res,
        'NOT_FOUND',
        'No routed delivery with this key is kept, or no handler took it.',
      );
    }
    res.json({ deliveryKey: req.params.key, runs });
  });

  get('/quarantine', takesNoParameters, async (_req, res) => {
    res.json(await readQuarantine(sources));
  });

  get('/quarantine/:id', async (req, res) => {
    const entry = await quarantine.get(req.params.id);
    if (!entry) return notFound(res, 'quarantine entry');
    const { body, ...rest } = entry;
    res.json({ ...rest, size: body.length, body: body.toString('base64'), bodyEncoding: 'base64' });
  });

  post('/quarantine/:id/replay', async (req, res) => {
    const result = await quarantine.replay(req.params.id, deliveries);
    if (result.status === 'not_found') return notFound(res, 'quarantine entry');
    res.json(result);
  });

  post('/quarantine/:id/delete', async (req, res) => {
    if (!(await quarantine.delete(req.params.id))) return notFound(res, 'quarantine entry');
    res.json({ id: req.params.id, status: 'deleted' });
  });

  get('/dead-letter', takesNoParameters, async (_req, res) => {
    res.json(await readDeadLetter(sources));
  });

  post('/dead-letter/retry', jsonBody, async (req, res) => {
    const group = GroupSchema.safeParse(req.body);
    if (!group.success) {
      return sendProblem(
        res,
        'BAD_REQUEST',
        'expected a JSON body {"handler": ..., "reason": ...}',
      );
    }
    res.json({ retried: await deadLetter.retryGroup(group.data) });
  });

  post('/dead-letter/:id/retry', async (req, res) => {
    if (!(await deadLetter.retry(req.params.id))) return notFound(res, 'failed run');
    res.json({ id: req.params.id, status: 'queued' });
  });

  api.use((_req, res) => sendProblem(res, 'NOT_FOUND', 'No such endpoint; see docs/admin-api.md.'));
  return api;
}

/** A JSON body's fields; anything else (an array, a string) has none, and fails the check. */
function jsonFields(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : { action: undefined };
}

/**
 * Runs a plan or a start; a selection it cannot act on (an unknown handler) answers 400, and a
 * start while this process has its most actions under way 503.
 */
export async function planned<T>(
  act: () => Promise<T>,
  res: express.Response,
): Promise<T | undefined> {
  try {
    return await act();
  } catch (error) {
    if (error instanceof BulkBusyError) {
      res.setHeader('Retry-After', '10');
      sendProblem(res, 'CONSOLE_BUSY', error.message);
      return undefined;
    }
    if (!(error instanceof BulkSelectionError)) throw error;
    sendProblem(res, 'BAD_REQUEST', error.message);
    return undefined;
  }
}

function notFound(res: express.Response, what: string): void {
  sendProblem(res, 'NOT_FOUND', `No ${what} with this id is kept.`);
}

/**
 * 405 with Allow for a method `path` does not take; one it takes (an endpoint of the path added
 * after this) goes on. HEAD is GET's.
 */
