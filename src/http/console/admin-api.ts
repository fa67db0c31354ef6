/**
 * The console's JSON API under /admin/api, for its pages and for scripts alike (the same token;
 * docs/admin-api.md lists every endpoint). Reads only here; state changes are POSTs.
 */
import express, { type Router } from 'express';
import type { DeliveryLog } from '../../worker/delivery-log.js';
import { sendProblem } from '../send-problem.js';
import { readDeliveriesQuery } from './deliveries-query.js';

export function createAdminApi(log: DeliveryLog): Router {
  const api = express.Router();

  api.get('/deliveries', async (req, res) => {
    const check = readDeliveriesQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    const page = await log.list(check.query);
    res.json({ ...page, offset: check.query.offset, limit: check.query.limit });
  });

  api.get('/deliveries/:key', async (req, res) => {
    const delivery = await log.get(req.params.key);
    if (!delivery) {
      return sendProblem(res, 'NOT_FOUND', 'No delivery with this key is kept (or ever was).');
    }
    res.json(delivery);
  });

  api.use((_req, res) => sendProblem(res, 'NOT_FOUND', 'No such endpoint; see docs/admin-api.md.'));
  return api;
}
