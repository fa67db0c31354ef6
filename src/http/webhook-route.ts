/**
 * POST /webhooks/feedback. The checks run in a fixed order, each with its own answer: content
 * type (415), size (413), signature header present (400), signature valid (401); only then is
 * the body parsed, validated and stored. Lean on purpose: this is the hot path.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { InvalidPayloadMode } from '../config.js';
import type { Logger } from '../logger.js';
import type { DeliveryQueue } from '../queue/deliveries-queue.js';
import type { NewQuarantineEntry } from '../queue/quarantine.js';
import { interpretPayload } from '../webhooks/delivery.js';
import type { HeaderLookup, SignatureScheme } from '../webhooks/signature-scheme.js';
import { isJsonContentType } from './json-content-type.js';
import { sendProblem } from './send-problem.js';

export const WEBHOOK_PATH = '/webhooks/feedback';

/** Seconds a sender is asked to wait before retrying while Redis is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

export interface WebhookRouteDeps {
  readonly scheme: SignatureScheme;
  readonly bodyLimitBytes: number;
  readonly invalidPayload: InvalidPayloadMode;
  readonly deliveries: DeliveryQueue;
  readonly quarantine: { add(entry: NewQuarantineEntry): Promise<string> };
  readonly logger: Logger;
  /** The clock, in milliseconds since the epoch; tests pass their own. */
  readonly now?: () => number;
}

export interface WebhookRouterOptions {
  /** Where the route is mounted. Default: `/webhooks/feedback`. */
  readonly path?: string;
}

const KEPT_HEADERS = ['content-type', 'user-agent'];
const EMPTY_BODY = Buffer.alloc(0);

/**
 * An Express router with the webhook route, to mount into an existing app. It reads the raw body
 * itself, so mount it before any JSON body parser.
 *
 * @example
 * app.use(createWebhookRouter({ scheme, bodyLimitBytes, invalidPayload, deliveries, quarantine, logger }));
 */
export function createWebhookRouter(
  deps: WebhookRouteDeps,
  { path = WEBHOOK_PATH }: WebhookRouterOptions = {},
): Router {
  const { scheme, logger, deliveries, quarantine } = deps;
  const now = deps.now ?? Date.now;
  const keptHeaders = [...KEPT_HEADERS, ...scheme.headers];
  const router = express.Router();

  const requireJson = (req: Request, res: Response, next: NextFunction) => {
    if (isJsonContentType(req.headers['content-type'])) return next();
    logger.warn({ outcome: 'rejected', reason: 'content_type' }, 'delivery refused');
    sendProblem(res, 'UNSUPPORTED_MEDIA_TYPE', 'Send the delivery as application/json.');
  };

  // Bounded read: a declared Content-Length over the limit is refused before any byte is read,
  // and a chunked body is cut off as soon as it passes the limit.
  const readBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });

  const receive = async (req: Request, res: Response) => {
    const receivedAt = now();
    const header: HeaderLookup = (name) => {
      const value = req.headers[name];
      const text = Array.isArray(value) ? value.join(', ') : value;
      return text === '' ? undefined : text;
    };

    const missing = scheme.missingHeaders(header);
    if (missing.length > 0) {
      logger.warn(
        { outcome: 'rejected', reason: 'signature_missing', missing },
        'delivery refused',
      );
      const names = missing.join(', ');
      return sendProblem(
        res,
        'SIGNATURE_MISSING',
        `Missing header${missing.length > 1 ? 's' : ''}: ${names}.`,
      );
    }

    if (req.body !== undefined && !Buffer.isBuffer(req.body)) {
      // Another body parser ran first; the raw bytes the signature covers are gone.
      logger.error('webhook router mounted after a body parser; mount it before express.json()');
      return sendProblem(res, 'INTERNAL', 'The receiver is misconfigured.');
    }
    const body: Buffer = req.body ?? EMPTY_BODY;

    const check = scheme.verify(body, header, receivedAt);
    if (!check.ok) {
      // The log says why; the answer does not, so it cannot be used as an oracle.
      logger.warn({ outcome: 'rejected', reason: `signature_${check.reason}` }, 'delivery refused');
      return sendProblem(res, 'SIGNATURE_INVALID', 'The signature does not match the body.');
    }

    const deliveryId = scheme.deliveryId(header);
    const outcome = interpretPayload(body, { deliveryId, receivedAt: new Date(receivedAt) });
    const signed = { secretIndex: check.secretIndex };

    try {
      switch (outcome.kind) {
        case 'ignored':
          logger.info({ ...signed, outcome: 'ignored', event: outcome.event }, 'delivery ignored');
          return res.status(202).json({ status: 'ignored' });

        case 'invalid': {
          const fields = { ...signed, reason: outcome.reason, issues: outcome.issues };
          if (deps.invalidPayload === 'reject') {
            logger.warn({ ...fields, outcome: 'rejected' }, 'invalid delivery refused');
            return sendProblem(res, 'PAYLOAD_INVALID', describeInvalid(outcome.issues));
          }
          const id = await quarantine.add({
            receivedAt: new Date(receivedAt).toISOString(),
            reason: outcome.reason,
            issues: outcome.issues,
            headers: pickHeaders(header, keptHeaders),
            deliveryId,
            body,
          });
          logger.warn(
            { ...fields, outcome: 'quarantined', quarantineId: id },
            'delivery quarantined',
          );
          return res.status(202).json({ status: 'quarantined', id });
        }

        case 'delivery': {
          const { key } = outcome.delivery;
          const { status, jobId } = await deliveries.enqueue(outcome.delivery);
          logger.info({ ...signed, outcome: status, key, jobId }, `delivery ${status}`);
          return res.status(status === 'queued' ? 202 : 200).json({ status, id: key });
        }
      }
    } catch (error) {
      // Nothing was stored, so nothing may be acknowledged: the sender retries later.
      logger.error({ error: describeError(error) }, 'delivery not stored: redis unavailable');
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return sendProblem(res, 'QUEUE_UNAVAILABLE', 'The queue is unavailable; retry later.');
    }
  };

  router.post(path, requireJson, readBody, receive);
  router.all(path, (_req, res) => {
    res.setHeader('Allow', 'POST');
    sendProblem(res, 'METHOD_NOT_ALLOWED', `Deliveries are POSTed to ${path}.`);
  });
  router.use(path, answerBodyReadError(deps.bodyLimitBytes, logger));
  return router;
}

/** Maps the errors of reading the body (see body-parser's `type` field) to their problems. */
function answerBodyReadError(limit: number, logger: Logger) {
  return (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const type = error !== null && typeof error === 'object' && 'type' in error ? error.type : '';
    switch (type) {
      case 'entity.too.large':
        logger.warn({ outcome: 'rejected', reason: 'too_large', limit }, 'delivery refused');
        return sendProblem(res, 'PAYLOAD_TOO_LARGE', `The body is larger than ${limit} bytes.`);
      case 'encoding.unsupported':
        return sendProblem(res, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported content encoding.');
      case 'request.aborted':
      case 'request.size.invalid':
        return sendProblem(res, 'BAD_REQUEST', 'The body was not received whole.');
      default:
        return next(error);
    }
  };
}

function pickHeaders(header: HeaderLookup, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = header(name);
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

function describeInvalid(issues: readonly { path: string; message: string }[]): string {
  const first = issues[0];
  if (!first) return 'The payload is not a feedback delivery.';
  const where = first.path === '' ? '' : ` at ${first.path}`;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return `The payload is not a feedback delivery: ${first.message}${where}${more}.`;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
