/**
 * GET /healthz (the process serves), GET /readyz (it can do its work: Redis answers and it is not
 * shutting down) and GET /metrics (Prometheus), for the receiver and the worker alike. On the
 * receiver's webhook port /metrics is served only behind the admin token (see app.ts).
 */
import express, { type Request, type Response, type Router } from 'express';
import { QUEUE_RETRY_AFTER_SECONDS } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { sendProblem } from './send-problem.js';

export interface ProbeDeps {
  readonly isReady: () => Promise<boolean>;
  readonly metrics?: Metrics | undefined;
}

export function createProbeRouter({ isReady, metrics }: ProbeDeps): Router {
  const router = express.Router();
  // The process is up and serving: an orchestrator restarts it when this fails.
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // The process can do its work: an orchestrator sends traffic elsewhere when this fails.
  router.get('/readyz', async (_req, res) => {
    if (await isReady()) {
      res.json({ status: 'ready' });
      return;
    }
    // As every QUEUE_UNAVAILABLE answer (docs/errors.md): a caller that is not a probe is told
    // when to ask again.
    res.setHeader('Retry-After', String(QUEUE_RETRY_AFTER_SECONDS));
    sendProblem(res, 'QUEUE_UNAVAILABLE', 'Not ready: Redis does not answer, or shutting down.');
  });
  if (metrics) router.get('/metrics', serveMetrics(metrics));
  return router;
}

/** GET /metrics: the registry in Prometheus's text format. */
export function serveMetrics(metrics: Metrics) {
  return async (_req: Request, res: Response) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  };
}
