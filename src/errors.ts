/**
 * The one registry of error codes this service answers with. Each becomes an RFC 9457 problem
 * (`application/problem+json`) with a stable `code`; docs/errors.md lists the same codes, and a
 * test keeps the two in step. Add a code here, never a status inline.
 */
export const ERROR_CODES = {
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  SIGNATURE_MISSING: { status: 400, title: 'Signature header missing' },
  SIGNATURE_INVALID: { status: 401, title: 'Signature invalid' },
  ADMIN_UNAUTHORIZED: { status: 401, title: 'Admin token required' },
  CROSS_SITE_REQUEST: { status: 403, title: 'Cross-site request refused' },
  JOB_CHANGE_REFUSED: { status: 403, title: 'Adding or editing jobs refused' },
  DASHBOARD_ACTION_REFUSED: { status: 403, title: 'Dashboard action refused' },
  PAYLOAD_INVALID: { status: 422, title: 'Payload invalid' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  RUN_NOT_COMPLETED: { status: 409, title: 'Run not completed' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  QUEUE_UNAVAILABLE: { status: 503, title: 'Queue unavailable' },
  QUEUE_NOT_REPLICATED: { status: 503, title: 'Queue not replicated' },
  CONSOLE_BUSY: { status: 503, title: 'Console busy' },
  INTERNAL: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An RFC 9457 problem details object, with this service's stable `code`. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ErrorCode;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problem(code: ErrorCode, detail: string): Problem {
  const { status, title } = ERROR_CODES[code];
  return { type: problemType(code), title, status, detail, code };
}

/** A URN rather than a URL: stable, and it does not depend on where the docs are hosted. */
export function problemType(code: ErrorCode): string {
  return `urn:feedback-receiver:error:${code.toLowerCase().replaceAll('_', '-')}`;
}

const SERVICE_ERROR = Symbol.for('feedback-receiver.ServiceError');

export interface ServiceErrorOptions {
  readonly cause?: unknown;
  /** Sent as `Retry-After`, for a failure that passes (an outage, a busy console). */
  readonly retryAfterSeconds?: number;
}

/**
 * An error that knows how it is answered: its registered code, and that code's HTTP status. The
 * app's one error handler answers it with its code, status and message (the problem's detail),
 * so a new kind of failure cannot fall through to a generic 400 or 500. Its message is shown to
 * the client: it must say nothing a client may not know.
 */
export class ServiceError extends Error {
  override readonly name: string = 'ServiceError';
  readonly [SERVICE_ERROR] = true;
  readonly code: ErrorCode;
  /** ERROR_CODES[code].status: the registry decides, never the thrower. */
  readonly statusCode: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: ServiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.statusCode = ERROR_CODES[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * Makes an internal error with its code and status, as fastify's `createError` does.
 *
 * @example
 * throw createError('PAYLOAD_TOO_LARGE', 'The body is larger than 16 KiB.');
 */
export function createError(
  code: ErrorCode,
  message: string,
  options?: ServiceErrorOptions,
): ServiceError {
  return new ServiceError(code, message, options);
}

/** True for a ServiceError (and its subclasses), even from another copy of this package. */
export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && SERVICE_ERROR in error;
}

/** Seconds a client is asked to wait before retrying while Redis is unavailable. */
export const QUEUE_RETRY_AFTER_SECONDS = 5;

const QUEUE_UNAVAILABLE = Symbol.for('feedback-receiver.QueueUnavailableError');

/**
 * Redis could not take a write or answer a read: no connection, no answer in time, or a Redis
 * that refuses writes (a replica, a full disk, out of memory, still loading). The client should
 * retry later; any other error while storing is a bug, not an outage. Its message names no
 * command and none of its arguments.
 */
export class QueueUnavailableError extends ServiceError {
  override readonly name = 'QueueUnavailableError';
  readonly [QUEUE_UNAVAILABLE] = true;

  constructor(cause: unknown) {
    super('QUEUE_UNAVAILABLE', 'The queue is unavailable; retry later.', {
      cause,
      retryAfterSeconds: QUEUE_RETRY_AFTER_SECONDS,
    });
  }
}

/** True for a QueueUnavailableError, even from another copy of this package. */
export function isQueueUnavailableError(error: unknown): error is QueueUnavailableError {
  return error instanceof Error && QUEUE_UNAVAILABLE in error;
}

const QUEUE_NOT_REPLICATED = Symbol.for('feedback-receiver.QueueNotReplicatedError');

/**
 * Redis took the write, but fewer replicas than ACK_REPLICAS confirmed it in time, so a failover
 * could still lose it. The sender should retry; if the write survives, the retry is a duplicate.
 */
export class QueueNotReplicatedError extends ServiceError {
  override readonly name = 'QueueNotReplicatedError';
  readonly [QUEUE_NOT_REPLICATED] = true;

  constructor(message: string) {
    super('QUEUE_NOT_REPLICATED', message, { retryAfterSeconds: QUEUE_RETRY_AFTER_SECONDS });
  }
}

/** True for a QueueNotReplicatedError, even from another copy of this package. */
export function isQueueNotReplicatedError(error: unknown): error is QueueNotReplicatedError {
  return error instanceof Error && QUEUE_NOT_REPLICATED in error;
}
