import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  isApiError,
  isFinalApiError,
  type ApiError,
  type ApiRateLimitedError,
  type ApiTimeoutError,
} from '../../src/api/api-errors.js';
import { createApiClient, parseRetryAfter, type ApiClient } from '../../src/api/client.js';
import { createLogger } from '../../src/logger.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { freePort } from '../helpers/free-port.js';

let api: FakeFeedbackApi;
let client: ApiClient;
const logs: string[] = [];

beforeAll(async () => {
  api = await startFakeFeedbackApi();
});
afterAll(async () => {
  await api.close();
});
beforeEach(() => {
  api.respondWith(undefined);
  api.requests.length = 0;
  logs.length = 0;
  client = clientWithTimeout(10_000);
});

/**
 * A client of the fake API. Only the timeout's own test uses a short one: on a loaded CI machine
 * the first request of a file (fetch's first connection, the JIT) took over 300 ms.
 */
function clientWithTimeout(timeoutMs: number): ApiClient {
  return createApiClient({
    baseUrl: api.url,
    token: API_TOKEN,
    timeoutMs,
    logger: createLogger({
      level: 'debug',
      destination: { write: (line: string) => void logs.push(line) },
    }),
  });
}

async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    expect(isApiError(error)).toBe(true);
    const apiError = error as ApiError;
    // The token never travels with an error: not in its message, its fields or its body.
    expect(JSON.stringify({ ...apiError, message: apiError.message })).not.toContain(API_TOKEN);
    return apiError;
  }
  throw new Error('expected the call to fail');
}

describe('the feedback API client', () => {
  it('sends the token as a Bearer header and only the patch fields given', async () => {
    const record = await client.updateFeedback('fb 1', { priority_id: 3, title: undefined });
    expect(record).toMatchObject({ id: 'fb 1', priority_id: 3 });
    expect(api.requests[0]).toMatchObject({
      method: 'PATCH',
      path: '/v1/feedback/fb%201',
      body: { priority_id: 3 },
      headers: { authorization: `Bearer ${API_TOKEN}`, 'content-type': 'application/json' },
    });
  });

  it('drops fields the endpoint does not take', async () => {
    await client.updateFeedback('fb_1', { status_id: 2, priority: 'High' } as never);
    expect(api.requests[0]?.body).toEqual({ status_id: 2 });
  });

  it('returns GET /v1/me as the service sent it', async () => {
    expect(await client.getMe()).toEqual({
      id: 'usr_1',
      name: 'Dana Tester',
      email: 'dana@example.com',
    });
  });

  it('creates a hook and returns the webhook', async () => {
    const hook = await client.createHook('prj_1', {
      event: 'feedback.created',
      target_url: 'https://hooks.example.com/feedback',
      secret: 'not-returned',
    });
    expect(hook).toMatchObject({ id: 'hook_1', event: 'feedback.created', active: true });
    expect(api.requests[0]?.body).toMatchObject({ secret: 'not-returned' });
  });

  it.each([
    [400, 'ApiValidationError', true],
    [401, 'ApiUnauthorizedError', true],
    [403, 'ApiForbiddenError', true],
    [404, 'ApiNotFoundError', true],
    [409, 'ApiConflictError', true],
    [422, 'ApiValidationError', true],
    [500, 'ApiServerError', false],
    [503, 'ApiServerError', false],
    [418, 'ApiUnexpectedResponseError', false],
  ])('maps %i to %s, with method, URL, status and body', async (status, name, final) => {
    api.respondWith(() => ({ status, body: { errors: [`failure ${status}`] } }));
    const error = await failure(client.updateFeedback('fb_1', { priority_id: 1 }));
    expect(error.name).toBe(name);
    expect(error).toMatchObject({
      method: 'PATCH',
      url: `${api.url}/v1/feedback/fb_1`,
      status,
      body: { errors: [`failure ${status}`] },
    });
    expect(isFinalApiError(error)).toBe(final);
  });

  it('explains a 403 with the plans the API needs', async () => {
    api.respondWith(() => ({ status: 403, body: { errors: ['Forbidden'] } }));
    const error = await failure(client.getMe());
    expect(error.message).toMatch(/Company and Enterprise plans/);
  });

  it('explains a 401 as a missing, wrong or revoked token', async () => {
    const wrong = createApiClient({ baseUrl: api.url, token: 'tok_wrong' });
    const error = await failure(wrong.getMe());
    expect(error.name).toBe('ApiUnauthorizedError');
    expect(error.message).toMatch(/missing, wrong or revoked/);
  });

  it('carries the Retry-After of a 429, in seconds or as a date', async () => {
    api.respondWith(() => ({
      status: 429,
      headers: { 'Retry-After': '7' },
      body: { errors: ['Too many'] },
    }));
    const error = (await failure(client.getMe())) as ApiRateLimitedError;
    expect(error.name).toBe('ApiRateLimitedError');
    expect(error.retryAfterMs).toBe(7000);
    expect(error.source).toBe('service');
    expect(isFinalApiError(error)).toBe(false);
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter(null)).toBe(60_000);
  });

  it('gives up after the timeout', async () => {
    api.respondWith(() => 'hang');
    const error = (await failure(clientWithTimeout(300).getMe())) as ApiTimeoutError;
    expect(error.name).toBe('ApiTimeoutError');
    expect(error.timeoutMs).toBe(300);
  });

  it('reports a dropped connection as a network failure', async () => {
    api.respondWith(() => 'drop');
    expect((await failure(client.getMe())).name).toBe('ApiNetworkError');
  });

  it('reports an address nobody listens on as a network failure, saying why, not "fetch failed"', async () => {
    const nobody = createApiClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      token: API_TOKEN,
    });
    const error = await failure(nobody.getMe());
    expect(error.name).toBe('ApiNetworkError');
    expect(error.message).toMatch(
      /^Cannot reach the feedback API for GET \S+: connect ECONNREFUSED/,
    );
  });

  it('refuses a success answer that is not a feedback record', async () => {
    api.respondWith(() => ({ status: 200, body: { ok: true } }));
    expect((await failure(client.updateFeedback('fb_1', { type_id: 1 }))).name).toBe(
      'ApiUnexpectedResponseError',
    );
  });

  it('says what is missing when it has no URL or token', async () => {
    const unconfigured = createApiClient({ baseUrl: undefined, token: undefined });
    const error = await failure(unconfigured.getMe());
    expect(error.name).toBe('ApiNotConfiguredError');
    expect(error.message).toMatch(/FEEDBACK_API_URL/);
    expect(isFinalApiError(error)).toBe(true);
  });

  it('logs each call, and never the token', async () => {
    await client.getMe();
    api.respondWith(() => ({ status: 500 }));
    await failure(client.getMe());
    expect(logs.length).toBe(2);
    expect(logs.join('')).toContain('"status":500');
    expect(logs.join('')).not.toContain(API_TOKEN);
  });

  it('waits for a slot of its rate limiter, and gives a long wait back as a rate-limit error', async () => {
    const waits = [50, 0];
    const patient = createApiClient({
      baseUrl: api.url,
      token: API_TOKEN,
      rateLimiter: { acquire: async () => waits.shift() ?? 0 },
    });
    await patient.getMe();
    expect(waits).toEqual([]);

    const busy = createApiClient({
      baseUrl: api.url,
      token: API_TOKEN,
      maxSlotWaitMs: 100,
      rateLimiter: { acquire: async () => 5_000 },
    });
    const error = (await failure(busy.getMe())) as ApiRateLimitedError;
    expect(error).toMatchObject({
      name: 'ApiRateLimitedError',
      source: 'limiter',
      retryAfterMs: 5_000,
    });
    expect(api.requests).toHaveLength(1);
  });
});
