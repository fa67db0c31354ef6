/**
 * POST /webhooks/feedback. The checks run in a fixed order, each with its own answer: content
 * type (415), size (413), signature headers present and sent once (400), signature valid (401);
 * only then is the body parsed, validated and stored, in one Redis round trip. Lean on purpose:
 * this is the hot path, and everything that can be prepared once is prepared when the router is
 * built.
 */
import express, { type Request, type Response, type Router } from 'express';
import {
  isQueueNotReplicatedError,
  isQueueUnavailableError,
  QUEUE_RETRY_AFTER_SECONDS,
  type ErrorCode,
} from '../errors.js';
import type { InvalidPayloadMode } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { DeliveryQueue } from '../queue/deliveries-queue.js';
import type { DeliveryStats } from '../queue/delivery-stats.js';
import type { NewQuarantineEntry, QuarantineAdded } from '../queue/quarantine.js';
import { activeSpan, inSpan, tracingOn } from '../tracing/tracer.js';
import { interpretPayload } from '../webhooks/delivery.js';
import { secretNumber } from '../webhooks/signature-check.js';
import type { HeaderLookup, SignatureScheme } from '../webhooks/signature-scheme.js';
import { hasUtf8Charset, isJsonContentType } from './json-content-type.js';
import { BodyTooLargeError, readRawBody } from './read-raw-body.js';
import { sendProblem } from './send-problem.js';

export const WEBHOOK_PATH = '/webhooks/feedback';

/** Seconds a sender is asked to wait before retrying while Redis is unavailable. */
export const RETRY_AFTER_SECONDS = QUEUE_RETRY_AFTER_SECONDS;

export interface WebhookRouteDeps {
  readonly scheme: SignatureScheme;
  readonly bodyLimitBytes: number;
  readonly invalidPayload: InvalidPayloadMode;
  readonly deliveries: DeliveryQueue;
  readonly quarantine: { add(entry: NewQuarantineEntry): Promise<QuarantineAdded> };
  readonly logger: Logger;
  /** Counts outcomes and times enqueues; see src/metrics.ts. */
  readonly metrics?: Pick<
    Metrics,
    'deliveries' | 'secretMatches' | 'enqueueDuration' | 'quarantineDropped'
  >;
  /** The same counts, shared in Redis for the console's overview. */
  readonly stats?: Pick<DeliveryStats, 'count' | 'secretMatched'> | undefined;
  /** The clock, in milliseconds since the epoch; tests pass their own. */
  readonly now?: () => number;
}

export interface WebhookRouterOptions {
  /** Where the route is mounted. Default: `/webhooks/feedback`. */
  readonly path?: string;
}

const KEPT_HEADERS = ['content-type', 'user-agent'];

/** A request whose signature verified, with what the checks read. */
interface Verified {
  readonly ok: true;
  readonly body: Buffer;
  readonly header: HeaderLookup;
  readonly secretIndex: number;
}

/** The outcome of the checks: verified, or the refusal to answer with. */
type Checked = Verified | { readonly ok: false; readonly answer: (res: Response) => void };

/**
 * An Express router with the webhook route, to mount into an existing app. It reads the raw body
 * itself, so mount it before any JSON body parser.
 *
 * @example
 * const deps = { scheme, bodyLimitBytes, invalidPayload, deliveries, quarantine, logger };
 * app.use(createWebhookRouter(deps));
 */
export function createWebhookRouter(
  deps: WebhookRouteDeps,
  { path = WEBHOOK_PATH }: WebhookRouterOptions = {},
): Router {
  const { scheme, logger, deliveries, quarantine, metrics, stats } = deps;
  const now = deps.now ?? Date.now;
  const keptHeaders = [...KEPT_HEADERS, ...scheme.headers];
  const router = express.Router();
  // Decided when the router is made (tracing starts before): without it, no span is asked for.
  const tracing = tracingOn();

  /** Counts an outcome, and puts it on the request's span (when tracing is on). */
  const counted = (outcome: string, reason = '') => {
    metrics?.deliveries.inc({ outcome, reason });
    stats?.count(outcome, reason);
    if (tracing) {
      activeSpan().setAttributes({
        'feedback.delivery.outcome': outcome,
        'feedback.delivery.reason': reason || undefined,
      });
    }
  };
  const refuse = (res: Response, code: ErrorCode, reason: string, detail: string, extra = {}) => {
    markLogged(res);
    logger.warn({ outcome: 'rejected', reason, ...extra }, 'delivery refused');
    counted('rejected', reason);
    sendProblem(res, code, detail);
  };

  /** A refusal, answered inside the request's span (when tracing is on). */
  const refusal = (code: ErrorCode, reason: string, detail: string, extra = {}): Checked => ({
    ok: false,
    answer: (res) => refuse(res, code, reason, detail, extra),
  });

  /**
   * The checks before anything is trusted: content type, encoding, size, signature. Answers
   * nothing itself, so the answer can be given inside a span that continues the sender's trace
   * only once its signature verified.
   */
  const authenticate = async (req: Request, receivedAt: number): Promise<Checked> => {
    if (!isJsonContentType(req.headers['content-type'])) {
      return refusal(
        'UNSUPPORTED_MEDIA_TYPE',
        'content_type',
        'Send the delivery as application/json.',
      );
    }
    if (!hasUtf8Charset(req.headers['content-type']!)) {
      return refusal(
        'UNSUPPORTED_MEDIA_TYPE',
        'charset',
        'Send the delivery as UTF-8 JSON: charset=utf-8, or no charset.',
      );
    }
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      return refusal(
        'UNSUPPORTED_MEDIA_TYPE',
        'content_encoding',
        'Send the body without content encoding.',
      );
    }
    if (req.body !== undefined) {
      // Another body parser ran first; the raw bytes the signature covers are gone.
      return {
        ok: false,
        answer: (res) => {
          logger.error(
            'webhook router mounted after a body parser; mount it before express.json()',
          );
          sendProblem(res, 'INTERNAL', 'The receiver is misconfigured.');
        },
      };
    }

    let body: Buffer;
    try {
      body = await readRawBody(req, deps.bodyLimitBytes);
    } catch (error) {
      return error instanceof BodyTooLargeError
        ? refusal(
            'PAYLOAD_TOO_LARGE',
            'too_large',
            `The body is larger than ${deps.bodyLimitBytes} bytes.`,
          )
        : refusal('BAD_REQUEST', 'incomplete', 'The body was not received whole.');
    }

    const header: HeaderLookup = (name) => {
      const text = req.headersDistinct[name]?.[0];
      return text === '' ? undefined : text;
    };
    const missing = scheme.missingHeaders(header);
    if (missing.length > 0) {
      const detail = `Missing header${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}.`;
      return refusal('SIGNATURE_MISSING', 'signature_missing', detail, { missing });
    }
    // Node joins a repeated header's values with ", ", which is no signature of either scheme
    // (and no delivery id): a signature header is one value, even the space-separated list of
    // Standard Webhooks, so a repeat is refused by name rather than read as a wrong signature.
    const repeated = scheme.headers.find((name) => (req.headersDistinct[name]?.length ?? 0) > 1);
    if (repeated !== undefined) {
      // Standard Webhooks puts several signatures in its signature header (webhook- or svix-).
      const list = scheme.name === 'standard-webhooks' && repeated.endsWith('-signature');
      const detail = `Send the ${repeated} header once${
        list ? ': several signatures go in it, space-separated' : ''
      }.`;
      return refusal('BAD_REQUEST', 'signature_repeated', detail, { repeated });
    }
    const check = scheme.verify(body, header, receivedAt);
    if (!check.ok) {
      // One answer for every failure, so it cannot be used as an oracle.
      return refusal(
        'SIGNATURE_INVALID',
        `signature_${check.reason}`,
        'The signature does not match the body.',
      );
    }
    return { ok: true, body, header, secretIndex: check.secretIndex };
  };

  const store = async (
    res: Response,
    { body, header, secretIndex }: Verified,
    receivedAt: number,
  ) => {
    const check = { secretIndex };
    // The metric's label keeps its name, `index`; its value, like the logs', counts from 1.
    const number = secretNumber(secretIndex);
    metrics?.secretMatches.inc({ index: String(number) });
    stats?.secretMatched(check.secretIndex);
    const span = activeSpan();
    if (tracing) {
      span.addEvent('signature verified', { 'feedback.secret_index': number });
    }
    const deliveryId = scheme.deliveryId(header);
    const outcome = interpretPayload(body, {
      deliveryId,
      receivedAt: new Date(receivedAt),
      receipt: { scheme: scheme.name, secretIndex: check.secretIndex },
    });
    const signed = { secretIndex: number };
    if (tracing) span.addEvent('payload read', { 'feedback.payload': outcome.kind });
    try {
      switch (outcome.kind) {
        case 'ignored':
          logger.info({ ...signed, outcome: 'ignored', event: outcome.event }, 'delivery ignored');
          counted('ignored');
          return answer(res, 202, { status: 'ignored' });

        case 'invalid': {
          const issues = { ...signed, reason: outcome.reason, issues: outcome.issues };
          if (deps.invalidPayload === 'reject') {
            return refuse(
              res,
              'PAYLOAD_INVALID',
              outcome.reason,
              describeInvalid(outcome.issues),
              issues,
            );
          }
          const { id, received, dropped } = await quarantine.add({
            receivedAt: new Date(receivedAt).toISOString(),
            reason: outcome.reason,
            issues: outcome.issues,
            headers: pickHeaders(header, keptHeaders),
            deliveryId,
            body,
          });
          const droppedCount = dropped.age + dropped.count + dropped.bytes;
          for (const [bound, count] of Object.entries(dropped)) {
            if (count > 0) metrics?.quarantineDropped.inc({ bound }, count);
          }
          logger.warn(
            {
              ...issues,
              outcome: 'quarantined',
              quarantineId: id,
              ...(received > 1 ? { received } : {}),
              ...(droppedCount > 0 ? { quarantineDropped: dropped } : {}),
            },
            droppedCount > 0
              ? `delivery quarantined; ${droppedCount} older entries dropped to keep the quarantine within its bounds`
              : received > 1
                ? 'delivery quarantined again (sent before; one entry)'
                : 'delivery quarantined',
          );
          if (tracing) {
            span.setAttributes({
              'feedback.quarantine.id': id,
              'feedback.delivery.reason': outcome.reason,
            });
          }
          counted('quarantined');
          return answer(res, 202, { status: 'quarantined', id });
        }

        case 'delivery': {
          const { key } = outcome.delivery;
          const stopTimer = metrics?.enqueueDuration.startTimer();
          const { status, jobId } = await deliveries.enqueue(outcome.delivery);
          stopTimer?.();
          if (tracing)
            span.setAttributes({ 'feedback.delivery.key': key, 'feedback.job.id': jobId });
          logger.info({ ...signed, outcome: status, key, jobId }, `delivery ${status}`);
          counted(status);
          return answer(res, status === 'queued' ? 202 : 200, { status, id: key });
        }
      }
    } catch (error) {
      // Stored, but not yet on enough replicas (ACK_REPLICAS): a failover could still lose it,
      // so it is not acknowledged. If it survives, the sender's retry is answered as a duplicate.
      if (isQueueNotReplicatedError(error)) {
        logger.error({ error: error.message }, 'delivery not acknowledged: not replicated');
        counted('rejected', 'not_replicated');
        res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
        return sendProblem(
          res,
          'QUEUE_NOT_REPLICATED',
          'Too few Redis replicas confirmed the delivery in time; retry later.',
        );
      }
      // Not acknowledged, though it may be stored all the same: a write Redis did not answer in
      // time still runs if Redis resumes. The sender's retry is safe either way, answered as a
      // duplicate if it was stored.
      if (isQueueUnavailableError(error)) {
        logger.error(
          { error: describeError(error.cause) },
          'delivery not acknowledged: redis unavailable (it may be stored all the same; the sender retries)',
        );
        counted('rejected', 'queue_unavailable');
        res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
        return sendProblem(res, 'QUEUE_UNAVAILABLE', 'The queue is unavailable; retry later.');
      }
      // A bug, not an outage: retrying would fail the same way, so no Retry-After.
      logger.error({ err: error }, 'delivery not stored: internal error');
      counted('rejected', 'internal');
      return sendProblem(res, 'INTERNAL', 'The delivery could not be stored.');
    }
  };

  const receive = async (req: Request, res: Response) => {
    const receivedAt = now();
    // Every path writes the request's one log line itself, with what it learned.
    markLogged(res);
    if (!tracing) {
      const checked = await authenticate(req, receivedAt);
      return checked.ok ? store(res, checked, receivedAt) : checked.answer(res);
    }
    const startTime = Date.now();
    const checked = await authenticate(req, receivedAt);
    // Only a request whose signature verified continues the sender's trace: an unauthenticated
    // caller must not choose trace ids (a ratio sampler keeps whichever ids it is given).
    return inSpan(
      `POST ${path}`,
      {
        kind: 'server',
        startTime,
        ...(checked.ok ? { continueFrom: req.headers } : {}),
        attributes: {
          'http.request.method': 'POST',
          'http.route': path,
          'url.path': req.originalUrl.split('?', 1)[0],
        },
      },
      async (span) => {
        if (checked.ok) await store(res, checked, receivedAt);
        else checked.answer(res);
        span.setAttributes({ 'http.response.status_code': res.statusCode });
        if (res.statusCode >= 500) span.fail(`answered ${res.statusCode}`);
      },
    );
  };

  router.post(path, receive);
  router.all(path, (_req, res) => {
    res.setHeader('Allow', 'POST');
    sendProblem(res, 'METHOD_NOT_ALLOWED', `Deliveries are POSTed to ${path}.`);
  });
  return router;
}

/**
 * A 2xx answer, written with Node's own `writeHead` and `end` rather than Express's `res.json`,
 * whose charset handling, ETag and freshness checks serve browsers and caches; this route answers
 * machines. `nosniff` is the one browser header that matters here (see app.ts).
 */
function answer(res: Response, status: number, body: object): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(json),
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(json);
}

/** Tells the app's request logger that this request has its log line already. */
export function markLogged(res: Response): void {
  res.locals.logged = true;
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
