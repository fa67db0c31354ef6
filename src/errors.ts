/**
 * The one registry of error codes this service answers with. Each becomes an RFC 9457 problem
 * (`application/problem+json`) with a stable `code`; docs/errors.md lists the same codes, and a
 * test keeps the two in step. Add a code here, never a status inline.
 */
export const ERROR_CODES = {
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  SIGNATURE_MISSING: { status: 400, title: 'Signature header missing' },
  SIGNATURE_INVALID: { status: 401, title: 'Signature invalid' },
  ADMIN_UNAUTHORIZED: { status: 401, title: 'Admin token required' },
  CROSS_SITE_REQUEST: { status: 403, title: 'Cross-site request refused' },
  JOB_CHANGE_REFUSED: { status: 403, title: 'Adding or editing jobs refused' },
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

const QUEUE_UNAVAILABLE = Symbol.for('feedback-receiver.QueueUnavailableError');

/**
 * Redis could not take a write: no connection, no answer in time, or a Redis that refuses writes
 * (a replica, a full disk, out of memory, still loading). The sender should retry later; any
 * other error while storing is a bug, not an outage.
 */
export class QueueUnavailableError extends Error {
  override readonly name = 'QueueUnavailableError';
  readonly [QUEUE_UNAVAILABLE] = true;

  constructor(cause: unknown) {
    super(`the queue is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
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
export class QueueNotReplicatedError extends Error {
  override readonly name = 'QueueNotReplicatedError';
  readonly [QUEUE_NOT_REPLICATED] = true;
}

/** True for a QueueNotReplicatedError, even from another copy of this package. */
export function isQueueNotReplicatedError(error: unknown): error is QueueNotReplicatedError {
  return error instanceof Error && QUEUE_NOT_REPLICATED in error;
}
