/**
 * One error class per way a call to the feedback API can fail. Each carries the method, the URL,
 * the status and the parsed body the service answered (`{"errors": [...]}`), never the token.
 * Check with the type guards, not instanceof: they hold across copies of this module.
 */

const API_ERROR = Symbol.for('feedback-receiver.ApiError');

export interface ApiErrorDetails {
  readonly method: string;
  readonly url: string;
  readonly status?: number | undefined;
  /** The parsed JSON body, or its text (cut to 2 KB) when it was not JSON. */
  readonly body?: unknown;
  readonly cause?: unknown;
}

export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  readonly [API_ERROR] = true;
  readonly method: string;
  readonly url: string;
  readonly status: number | undefined;
  readonly body: unknown;

  constructor(message: string, details: ApiErrorDetails) {
    super(message, details.cause === undefined ? {} : { cause: details.cause });
    this.method = details.method;
    this.url = details.url;
    this.status = details.status;
    this.body = details.body;
  }
}

/** 401: the token is missing, wrong or revoked. */
export class ApiUnauthorizedError extends ApiError {
  override readonly name = 'ApiUnauthorizedError';
  constructor(details: ApiErrorDetails) {
    super(
      `The feedback API refused the token (401 on ${details.method} ${details.url}): it is missing, wrong or revoked. Generate a new one under profile settings, API.`,
      details,
    );
  }
}

/** 403: the token is valid, but the plan or the permissions are not enough. */
export class ApiForbiddenError extends ApiError {
  override readonly name = 'ApiForbiddenError';
  constructor(details: ApiErrorDetails) {
    super(
      `The feedback API answered 403 on ${details.method} ${details.url}: the API is available only on the Company and Enterprise plans, and the token's user needs permission on that project.`,
      details,
    );
  }
}

/** 404: no such record, project or endpoint. */
export class ApiNotFoundError extends ApiError {
  override readonly name = 'ApiNotFoundError';
  constructor(details: ApiErrorDetails) {
    super(`The feedback API found nothing at ${details.method} ${details.url} (404).`, details);
  }
}

/** 409: the request conflicts with what the service holds (a duplicate, say). Not retried. */
export class ApiConflictError extends ApiError {
  override readonly name = 'ApiConflictError';
  constructor(details: ApiErrorDetails) {
    super(
      `The feedback API refused ${details.method} ${details.url} as a conflict (409): ${describeBody(details.body)}`,
      details,
    );
  }
}

/** 400 or 422: the service refused what was sent. */
export class ApiValidationError extends ApiError {
  override readonly name = 'ApiValidationError';
  constructor(details: ApiErrorDetails) {
    super(
      `The feedback API refused the request ${details.method} ${details.url} (${details.status}): ${describeBody(details.body)}`,
      details,
    );
  }
}

/** 429 from the service, or no slot left in our own shared limit. Not a failed attempt. */
export class ApiRateLimitedError extends ApiError {
  override readonly name = 'ApiRateLimitedError';
  /** How long to wait before trying again. */
  readonly retryAfterMs: number;
  /** `service`: the API answered 429; `limiter`: FEEDBACK_API_RATE_LIMIT held the call back. */
  readonly source: 'service' | 'limiter';

  constructor(details: ApiErrorDetails & { retryAfterMs: number; source: 'service' | 'limiter' }) {
    super(
      details.source === 'service'
        ? `The feedback API is rate limiting (429 on ${details.method} ${details.url}); retry in ${details.retryAfterMs} ms.`
        : `The shared API rate limit is used up; ${details.method} ${details.url} can go in ${details.retryAfterMs} ms.`,
      details,
    );
    this.retryAfterMs = details.retryAfterMs;
    this.source = details.source;
  }
}

/** 5xx: the service failed. */
export class ApiServerError extends ApiError {
  override readonly name = 'ApiServerError';
  constructor(details: ApiErrorDetails) {
    super(
      `The feedback API failed on ${details.method} ${details.url} (${details.status}).`,
      details,
    );
  }
}

/** Any other status the client does not expect, or a success answer it cannot read. */
export class ApiUnexpectedResponseError extends ApiError {
  override readonly name = 'ApiUnexpectedResponseError';
  constructor(reason: string, details: ApiErrorDetails) {
    super(
      `Unexpected answer from the feedback API to ${details.method} ${details.url}: ${reason}`,
      details,
    );
  }
}

/** The request did not reach the service, or the connection broke. */
export class ApiNetworkError extends ApiError {
  override readonly name = 'ApiNetworkError';
  constructor(details: ApiErrorDetails) {
    super(
      `Cannot reach the feedback API for ${details.method} ${details.url}: ${networkReason(details.cause)}`,
      details,
    );
  }
}

/**
 * What went wrong on the network, from the innermost cause: fetch's own error says only "fetch
 * failed", and what an operator needs (refused, no such host, an expired certificate) is its cause.
 */
function networkReason(cause: unknown): string {
  if (!(cause instanceof Error)) return 'network failure';
  const inner = cause.cause instanceof Error ? networkReason(cause.cause) : '';
  // An AggregateError (each address refused) has no message of its own, only a code.
  return inner || cause.message || (cause as NodeJS.ErrnoException).code || 'network failure';
}

/** No answer within the timeout. */
export class ApiTimeoutError extends ApiError {
  override readonly name = 'ApiTimeoutError';
  readonly timeoutMs: number;
  constructor(details: ApiErrorDetails & { timeoutMs: number }) {
    super(
      `The feedback API did not answer ${details.method} ${details.url} within ${details.timeoutMs} ms.`,
      details,
    );
    this.timeoutMs = details.timeoutMs;
  }
}

/** FEEDBACK_API_URL or the token is not configured. */
export class ApiNotConfiguredError extends ApiError {
  override readonly name = 'ApiNotConfiguredError';
}

export function isApiError(error: unknown): error is ApiError {
  return error !== null && typeof error === 'object' && API_ERROR in error;
}

export function isApiRateLimitedError(error: unknown): error is ApiRateLimitedError {
  return isApiError(error) && error.name === 'ApiRateLimitedError';
}

/** Statuses that retrying the same request cannot fix. */
const FINAL_STATUSES = new Set([400, 401, 403, 404, 409, 422]);

/** True for an API failure that retrying cannot fix: 400, 401, 403, 404, 409, 422, or no configuration. */
export function isFinalApiError(error: unknown): error is ApiError {
  return (
    isApiError(error) &&
    (error.name === 'ApiNotConfiguredError' ||
      (error.status !== undefined && FINAL_STATUSES.has(error.status)))
  );
}

function describeBody(body: unknown): string {
  if (body !== null && typeof body === 'object' && 'errors' in body && Array.isArray(body.errors)) {
    return body.errors
      .map((entry: unknown) => (typeof entry === 'string' ? entry : JSON.stringify(entry)))
      .join('; ');
  }
  return typeof body === 'string' && body !== '' ? body : 'no details';
}
