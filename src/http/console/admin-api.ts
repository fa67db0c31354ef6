/**
 * The console's JSON API under /admin/api, for its pages and for scripts alike (the same token;
 * docs/admin-api.md lists every endpoint with an example answer). State changes are POSTs.
 */
import express, { type Router } from 'express';
import { z } from 'zod';
import { sendProblem } from '../send-problem.js';
import type { ConsoleSources } from './console-sources.js';
import { readDeliveriesQuery } from './deliveries-query.js';
import { readDeadLetter, readOverview, readQuarantine } from './overview.js';

const GroupSchema = z.strictObject({ handler: z.string(), reason: z.string() });

export function createAdminApi(sources: ConsoleSources): Router {
  const { deliveryLog, quarantine, deliveries, deadLetter, runAgain } = sources;
  const api = express.Router();

  api.get('/overview', async (_req, res) => {
    res.json(await readOverview(sources));
  });

  api.get('/deliveries', async (req, res) => {
    const check = readDeliveriesQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const page = await deliveryLog.list(check.query);
    res.json({ ...page, offset: check.query.offset, limit: check.query.limit });
  });

  api.get('/deliveries/:key', async (req, res) => {
    const delivery = await deliveryLog.get(req.params.key);
    if (!delivery) return notFound(res, 'delivery');
    res.json(delivery);
  });

  api.post('/deliveries/:key/runs/:handler/run-again', async (req, res) => {
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

  api.post('/deliveries/:key/run-again', async (req, res) => {
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

  api.get('/quarantine', async (_req, res) => {
    res.json(await readQuarantine(sources));
  });

  api.get('/quarantine/:id', async (req, res) => {
    const entry = await quarantine.get(req.params.id);
    if (!entry) return notFound(res, 'quarantine entry');
    const { body, ...rest } = entry;
    res.json({ ...rest, size: body.length, body: body.toString('base64'), bodyEncoding: 'base64' });
  });

  api.post('/quarantine/:id/replay', async (req, res) => {
    const result = await quarantine.replay(req.params.id, deliveries);
    if (result.status === 'not_found') return notFound(res, 'quarantine entry');
    res.json(result);
  });

  api.post('/quarantine/:id/delete', async (req, res) => {
    if (!(await quarantine.delete(req.params.id))) return notFound(res, 'quarantine entry');
    res.json({ id: req.params.id, status: 'deleted' });
  });

  api.get('/dead-letter', async (_req, res) => {
    res.json(await readDeadLetter(sources));
  });

  api.post('/dead-letter/retry', express.json({ limit: '16kb' }), async (req, res) => {
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

  api.post('/dead-letter/:id/retry', async (req, res) => {
    if (!(await deadLetter.retry(req.params.id))) return notFound(res, 'failed run');
    res.json({ id: req.params.id, status: 'queued' });
  });

  api.use((_req, res) => sendProblem(res, 'NOT_FOUND', 'No such endpoint; see docs/admin-api.md.'));
  return api;
}

function notFound(res: express.Response, what: string): void {
  sendProblem(res, 'NOT_FOUND', `No ${what} with this id is kept.`);
}
