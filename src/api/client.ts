/**
 * A typed client for the three endpoints of the feedback API. Every call takes a slot from the
 * shared rate limiter first, has a timeout, and fails with one error class per kind of failure.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cutText } from '../cut-text.js';
import type { Logger } from '../logger.js';
import { activeSpan, inSpan, type TraceSpan } from '../tracing/tracer.js';
import { FeedbackRecordSchema, type FeedbackRecord } from '../webhooks/feedback-record.js';
import {
  ApiConflictError,
  ApiForbiddenError,
  ApiNetworkError,
  ApiNotConfiguredError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiServerError,
  ApiTimeoutError,
  ApiUnauthorizedError,
  ApiUnexpectedResponseError,
  ApiValidationError,
  type ApiErrorDetails,
} from './api-errors.js';
import { unlimited, type RateLimiter } from './rate-limiter.js';
import {
  FEEDBACK_PATCH_FIELDS,
  WebhookSchema,
  type FeedbackPatch,
  type NewHook,
  type Webhook,
} from './resources.js';

export interface RequestOptions {
  /** Aborts the request (and any wait for a rate-limit slot). */
  readonly signal?: AbortSignal | undefined;
}

export interface FeedbackApi {
  /** GET /v1/me: the token's user, as the service describes it (its shape is not specified). */
  getMe(options?: RequestOptions): Promise<unknown>;
  /** PATCH /v1/feedback/{id}: sends only the fields given; returns the updated record. */
  updateFeedback(
    id: string,
    patch: FeedbackPatch,
    options?: RequestOptions,
  ): Promise<FeedbackRecord>;
  /** POST /v1/projects/{projectId}/hooks: registers a webhook; returns it, without the secret. */
  createHook(projectId: string, hook: NewHook, options?: RequestOptions): Promise<Webhook>;
}

export interface ApiClient extends FeedbackApi {
  /** The same client, logging through `logger` and aborted by `signal`, for one handler run. */
  withContext(context: { logger?: Logger; signal?: AbortSignal }): FeedbackApi;
}

export interface ApiObserver {
  answered(method: string, status: number | 'error'): void;
  waitedForSlot(ms: number): void;
}

export interface ApiClientOptions {
  /** Base URL, e.g. `https://api.example.com`; calls fail with ApiNotConfiguredError without it. */
  readonly baseUrl: string | undefined;
  /** The Bearer token; only ever sent in the Authorization header. */
  readonly token: string | undefined;
  /** Per request. Default: 10 000. */
  readonly timeoutMs?: number;
  /** Default: unlimited. Workers pass the Redis limiter shared by every process. */
  readonly rateLimiter?: RateLimiter;
  /**
   * How long a call waits in-process for a rate-limit slot before it gives up with an
   * ApiRateLimitedError, which the worker turns into a delay of the job. Default: 2 000.
   */
  readonly maxSlotWaitMs?: number;
  readonly logger?: Logger;
  /** Told of every answer (or its absence) and every wait for a rate-limit slot, for metrics. */
  readonly observer?: ApiObserver;
  /** Default: the global fetch. */
  readonly fetch?: typeof fetch;
}

/** When a 429 carries no usable Retry-After, wait a whole window of the service's limit. */
const DEFAULT_RETRY_AFTER_MS = 60_000;
const MAX_BODY_TEXT = 2048;

/**
 * @example
 * const api = createApiClient({ baseUrl: 'https://api.example.com', token });
 * await api.updateFeedback('fb_1', { priority_id: 3 });
 */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const limiter = options.rateLimiter ?? unlimited;
  const maxSlotWaitMs = options.maxSlotWaitMs ?? 2_000;
  const fetchImpl = options.fetch ?? fetch;
  const apiHost = options.baseUrl === undefined ? undefined : new URL(options.baseUrl).hostname;

  async function waitForSlot(method: string, url: string, signal: AbortSignal | undefined) {
    for (;;) {
      const waitMs = await limiter.acquire();
      if (waitMs <= 0) return;
      if (waitMs > maxSlotWaitMs) {
        throw new ApiRateLimitedError({ method, url, retryAfterMs: waitMs, source: 'limiter' });
      }
      options.observer?.waitedForSlot(waitMs);
      activeSpan().addEvent('waited for a rate limit slot', { 'feedback.wait_ms': waitMs });
      await sleep(waitMs, undefined, signal ? { signal } : {});
    }
  }

  async function call(
    method: 'GET' | 'PATCH' | 'POST',
    route: { readonly template: string; readonly path: string },
    body: unknown,
    { logger, signal }: { logger: Logger | undefined; signal: AbortSignal | undefined },
  ): Promise<unknown> {
    const { path } = route;
    const url = `${options.baseUrl ?? ''}${path}`;
    if (options.baseUrl === undefined) {
      throw new ApiNotConfiguredError('FEEDBACK_API_URL is not set.', { method, url });
    }
    if (options.token === undefined) {
      throw new ApiNotConfiguredError('FEEDBACK_API_TOKEN is not set.', { method, url });
    }
    await waitForSlot(method, url, signal);
    return inSpan(
      `${method} ${route.template}`,
      {
        kind: 'client',
        attributes: {
          'http.request.method': method,
          'url.template': route.template,
          'server.address': apiHost,
        },
      },
      (span) => send(method, url, path, body, { logger, signal, span }),
    );
  }

  /** One request, its answer read and checked; the token is in a header, never in the span. */
  async function send(
    method: 'GET' | 'PATCH' | 'POST',
    url: string,
    path: string,
    body: unknown,
    {
      logger,
      signal,
      span,
    }: { logger: Logger | undefined; signal: AbortSignal | undefined; span: TraceSpan },
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const started = performance.now();
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers: {
          Authorization: `Bearer ${options.token}`,
          Accept: 'application/json',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      const details = { method, url, cause: error };
      logger?.warn({ api: { method, path, outcome: 'no_answer' } }, 'api call failed');
      options.observer?.answered(method, 'error');
      if (timeout.aborted && !signal?.aborted) throw new ApiTimeoutError({ ...details, timeoutMs });
      if (signal?.aborted) throw error;
      throw new ApiNetworkError(details);
    }
    span.setAttributes({ 'http.response.status_code': response.status });
    const parsed = await readBody(response, { method, url, timeoutMs }, timeout);
    const ms = Math.round(performance.now() - started);
    logger?.info({ api: { method, path, status: response.status, ms } }, 'api call');
    options.observer?.answered(method, response.status);
    if (response.ok) return parsed;

    const details: ApiErrorDetails = { method, url, status: response.status, body: parsed };
    switch (response.status) {
      case 400:
      case 422:
        throw new ApiValidationError(details);
      case 401:
        throw new ApiUnauthorizedError(details);
      case 403:
        throw new ApiForbiddenError(details);
      case 404:
        throw new ApiNotFoundError(details);
      case 409:
        throw new ApiConflictError(details);
      case 429:
        throw new ApiRateLimitedError({
          ...details,
          retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
          source: 'service',
        });
      default:
        if (response.status >= 500) throw new ApiServerError(details);
        throw new ApiUnexpectedResponseError(`status ${response.status}`, details);
    }
  }

  function bind(context: {
    logger?: Logger | undefined;
    signal?: AbortSignal | undefined;
  }): FeedbackApi {
    const contextOf = (request: RequestOptions | undefined) => ({
      logger: context.logger ?? options.logger,
      signal: request?.signal ?? context.signal,
    });
    return {
      getMe: (request) =>
        call('GET', { template: '/v1/me', path: '/v1/me' }, undefined, contextOf(request)),

      async updateFeedback(id, patch, request) {
        const path = `/v1/feedback/${encodeURIComponent(id)}`;
        const route = { template: '/v1/feedback/{id}', path };
        const answer = await call('PATCH', route, onlyPatchFields(patch), contextOf(request));
        return parseAnswer(FeedbackRecordSchema, answer, 'PATCH', `${options.baseUrl}${path}`);
      },

      async createHook(projectId, hook, request) {
        const path = `/v1/projects/${encodeURIComponent(projectId)}/hooks`;
        const route = { template: '/v1/projects/{id}/hooks', path };
        const answer = await call('POST', route, hook, contextOf(request));
        return parseAnswer(WebhookSchema, answer, 'POST', `${options.baseUrl}${path}`);
      },
    };
  }

  return { ...bind({}), withContext: (context) => bind(context) };
}

/** Only the fields the endpoint takes, and only those that are set. */
function onlyPatchFields(patch: FeedbackPatch): FeedbackPatch {
  const body: Record<string, unknown> = {};
  for (const field of FEEDBACK_PATCH_FIELDS) {
    if (patch[field] !== undefined) body[field] = patch[field];
  }
  return body as FeedbackPatch;
}

function parseAnswer<T>(
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } },
  answer: unknown,
  method: string,
  url: string,
): T {
  const parsed = schema.safeParse(answer);
  if (parsed.success) return parsed.data;
  throw new ApiUnexpectedResponseError('the body does not have the documented shape', {
    method,
    url,
    status: 200,
    body: answer,
  });
}

async function readBody(
  response: Response,
  { method, url, timeoutMs }: { method: string; url: string; timeoutMs: number },
  timeout: AbortSignal,
): Promise<unknown> {
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (timeout.aborted) throw new ApiTimeoutError({ method, url, cause: error, timeoutMs });
    throw new ApiNetworkError({ method, url, status: response.status, cause: error });
  }
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text.length > MAX_BODY_TEXT ? `${cutText(text, MAX_BODY_TEXT)}…` : text;
  }
}

/** Retry-After as seconds or as an HTTP date; a missing or unreadable value means a minute. */
export function parseRetryAfter(value: string | null, now = Date.now()): number {
  if (value === null) return DEFAULT_RETRY_AFTER_MS;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? DEFAULT_RETRY_AFTER_MS : Math.max(0, date - now);
}
