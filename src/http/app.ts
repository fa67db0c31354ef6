/**
 * The receiver's Express app: the webhook route, health probes, and problem answers for
 * everything else. All state comes in through `deps`, so tests build it with real or fake parts.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { isServiceError, type ErrorCode } from '../errors.js';
import { sendNotFound, sendProblem } from './send-problem.js';
import type { Metrics } from '../metrics.js';
import { createAdminRouter, type AdminDashboardOptions } from './admin-dashboard.js';
import { requireToken } from './admin-token.js';
import { createProbeRouter, serveMetrics } from './probes.js';
import { createWebhookRouter, WEBHOOK_PATH, type WebhookRouteDeps } from './webhook-route.js';

export interface AppDeps extends WebhookRouteDeps {
  /** Whether the receiver can store deliveries now (Redis answers); drives GET /readyz. */
  readonly isReady: () => Promise<boolean>;
  /** Fed request latencies; served at GET /metrics only with `metricsToken`. */
  readonly metrics?: Metrics;
  /**
   * Serves `metrics` at GET /metrics for requests that carry this token (the admin token, as
   * the console takes it). Without it /metrics is not served here: the queue depths and which
   * secrets match are not for whoever can reach the webhook port (METRICS_PORT serves them apart).
   */
  readonly metricsToken?: string | undefined;
  /** The dashboard at /admin/queues, when an admin token is configured. */
  readonly admin?: AdminDashboardOptions | undefined;
}

/** Route labels are fixed, so a scan of random paths cannot blow up the metrics' cardinality. */
const KNOWN_ROUTES = new Set([WEBHOOK_PATH, '/healthz', '/readyz', '/metrics']);

/**
 * Builds the receiver's Express app.
 *
 * @example
 * const app = createApp({ ...webhookDeps, isReady: () => redisAnswers(connection) });
 * app.listen(3000);
 */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');

  // One 'finish' listener per request, for both its latency metric and its log line. The webhook
  // route writes its own, richer log line; probes log at debug, since orchestrators call them
  // every few seconds.
  const { metrics, logger } = deps;
  app.use((req, res, next) => {
    const started = performance.now();
    // Read now: a router mounted at a path (the console's, at /admin) takes it off req.path while
    // it runs, and leaves it off once it has answered (/admin/api/overview would be /overview).
    const { path } = req;
    res.on('finish', () => {
      const seconds = (performance.now() - started) / 1000;
      const known = KNOWN_ROUTES.has(path);
      metrics?.requestDuration.observe(
        { method: req.method, route: known ? path : 'other', status: String(res.statusCode) },
        seconds,
      );
      if (res.locals.logged) return;
      const probe = path === '/healthz' || path === '/readyz' || path === '/metrics';
      logger[probe ? 'debug' : 'info'](
        {
          method: req.method,
          path: known ? path : path.slice(0, 200),
          status: res.statusCode,
          ms: Math.round(seconds * 1000),
        },
        'request',
      );
    });
    next();
  });

  // Before helmet: the webhook route answers machines, not browsers, so of helmet's dozen headers
  // only nosniff matters there, and the route sets it itself; the rest would be work for nothing
  // on the hot path.
  app.use(createWebhookRouter(deps));
  app.use(helmet());
  if (deps.admin) app.use(createAdminRouter(deps.admin));

  app.use(createProbeRouter({ isReady: deps.isReady }));
  if (metrics && deps.metricsToken !== undefined) {
    // In a router of its own, as the probes are: a router answers OPTIONS with Allow for the
    // paths it serves, where the app would pass it on to the 404 below.
    const metricsRouter = express.Router();
    metricsRouter.get('/metrics', requireToken(deps.metricsToken), serveMetrics(metrics));
    app.use(metricsRouter);
  }

  app.use(sendNotFound);

  app.use((error: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const answer = answerFor(error);
    if (answer.code === 'INTERNAL') {
      deps.logger.error(
        { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) },
        `unhandled error on ${req.method} ${req.path}`,
      );
    }
    if (answer.retryAfterSeconds !== undefined) {
      res.setHeader('Retry-After', String(answer.retryAfterSeconds));
    }
    sendProblem(res, answer.code, answer.detail);
  });

  return app;
}

interface Answer {
  readonly code: ErrorCode;
  readonly detail: string;
  readonly retryAfterSeconds?: number | undefined;
}

/**
 * How the app answers an error that reached it: a ServiceError by its own code and message;
 * an error of Express's body parsers (http-errors, with `status` and `expose`) by its status;
 * anything else is a bug, 500. A status without a code of its own here answers 400 or 500,
 * never with the error's message, which may name internals.
 */
function answerFor(error: unknown): Answer {
  if (isServiceError(error)) {
    return { code: error.code, detail: error.message, retryAfterSeconds: error.retryAfterSeconds };
  }
  const status = statusOf(error);
  if (status === 413) return { code: 'PAYLOAD_TOO_LARGE', detail: 'The body is too large.' };
  if (status === 415) {
    return {
      code: 'UNSUPPORTED_MEDIA_TYPE',
      detail: 'The body’s content encoding or charset is not supported.',
    };
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return { code: 'BAD_REQUEST', detail: 'The request could not be read.' };
  }
  return { code: 'INTERNAL', detail: 'Something went wrong on our side.' };
}

function statusOf(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const status =
    'status' in error ? error.status : 'statusCode' in error ? error.statusCode : undefined;
  return typeof status === 'number' ? status : undefined;
}
