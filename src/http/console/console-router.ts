/**
 * The delivery console at /admin: its pages, its assets and its JSON API (/admin/api). The
 * admin router puts the token check and the cross-site defence in front of all of it.
 */
import express, { type Response, type Router } from 'express';
import type { DeliveryLog } from '../../worker/delivery-log.js';
import { createAdminApi } from './admin-api.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import { readDeliveriesQuery } from './deliveries-query.js';
import type { Html } from './html.js';
import { CONSOLE_CSP, deliveriesPage, deliveryPage, notFoundPage } from './pages.js';
import { sendProblem } from '../send-problem.js';

export function createConsoleRouter(log: DeliveryLog): Router {
  const router = express.Router();
  router.use('/api', createAdminApi(log));

  router.get('/assets/console.css', (_req, res) => asset(res, 'text/css', CONSOLE_CSS));
  router.get('/assets/console.js', (_req, res) => asset(res, 'text/javascript', CONSOLE_JS));

  router.get('/', async (req, res) => {
    const check = readDeliveriesQuery(req.query);
    if (!check.ok) return sendProblem(res, 'BAD_REQUEST', check.problem);
    page(res, 200, deliveriesPage(await log.list(check.query), check.query));
  });

  router.get('/deliveries/:key', async (req, res) => {
    const delivery = await log.get(req.params.key);
    if (delivery) page(res, 200, deliveryPage(delivery));
    else page(res, 404, notFoundPage(req.params.key));
  });
  return router;
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
