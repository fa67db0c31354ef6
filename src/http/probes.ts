/**
 * GET /healthz (the process serves), GET /readyz (it can do its work: Redis answers and it is not
 * shutting down) and GET /metrics (Prometheus), for the receiver and the worker alike.
 */
import express, { type Router } from 'express';
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
    sendProblem(res, 'QUEUE_UNAVAILABLE', 'Not ready: Redis does not answer, or shutting down.');
  });
  if (metrics) {
    router.get('/metrics', async (_req, res) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
  }
  return router;
}
