/**
 * What a triage rule does beyond this record's PATCH: a PATCH of the group's first record, and a
 * notify posted to a chat's URL, over real sockets (the fake feedback API, a local "chat"). The
 * URL is a secret: these tests look for it in every log line and result, and must not find it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { loadWorkerConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { SimilarFacts } from '../../src/similar/similar-facts.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import type { Handler, HandlerContext } from '../../src/worker/handler.js';
import { isNotifyError } from '../../src/worker/triage/notify.js';
import { parseTriageRules, TriageRulesError } from '../../src/worker/triage/rules.js';
import {
  createTriageHandler,
  type TriageHandlerOptions,
  type TriageResult,
} from '../../src/worker/triage/triage-handler.js';
import { resolveHandlers } from '../../src/worker-process.js';
import {
  API_TOKEN,
  startFakeFeedbackApi,
  type FakeFeedbackApi,
} from '../helpers/fake-feedback-api.js';
import { createTestWorkerEnv } from '../helpers/test-worker.js';

const HOUR = 3_600_000;
/** The part of a Slack webhook URL that lets anyone post: it must never be seen. */
const SECRET_PATH = '/services/T0000/B0000/s3cr3tW3bh00kT0k3n';

let api: FakeFeedbackApi;
let chat: FakeFeedbackApi;
let lines: string[];

beforeAll(async () => {
  [api, chat] = await Promise.all([startFakeFeedbackApi(), startFakeFeedbackApi()]);
});
afterAll(async () => {
  await Promise.all([api.close(), chat.close()]);
});
beforeEach(() => {
  lines = [];
  api.requests.length = 0;
  api.respondWith(undefined);
  chat.requests.length = 0;
  chat.respondWith(() => ({ status: 200 }));
});
afterEach(() => {
  expect(lines.join('\n')).not.toContain(SECRET_PATH);
});

const variables: Record<string, string> = {
  SLACK_WEBHOOK_URL: '',
};
const readVariable = (name: string) => variables[name];

const incident = {
  name: 'incident',
  when: { similar: { atLeast: 5, within: '1h' } },
  target: 'first',
  set: { priority_id: 1 },
  notify: { urlFrom: 'SLACK_WEBHOOK_URL' },
};

function handlerFor(
  rules: unknown[],
  options: Partial<TriageHandlerOptions> = {},
  url = `${chat.url}${SECRET_PATH}`,
): Handler {
  variables.SLACK_WEBHOOK_URL = url;
  return createTriageHandler({
    rules: parseTriageRules(JSON.stringify({ rules }), 'test'),
    readVariable,
    consoleUrl: 'https://feedback.example.com',
    ...options,
  });
}

/** One attempt, with a context as the worker builds it, logging into `lines`. */
async function handle(
  handler: Handler,
  record: FeedbackRecord,
  similar?: SimilarFacts,
): Promise<TriageResult> {
  const logger = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(line) },
  });
  const context: HandlerContext = {
    record,
    delivery: {
      key: `feedback.created:${record.id}`,
      event: 'feedback.created',
      receivedAt: new Date().toISOString(),
    },
    api: createApiClient({ baseUrl: api.url, token: API_TOKEN, logger }),
    logger,
    attempt: 1,
    signal: new AbortController().signal,
    similar,
  };
  try {
    const result = (await handler.handle(context)) as TriageResult;
    lines.push(JSON.stringify(result));
    return result;
  } catch (error) {
    lines.push(String(error), JSON.stringify(error));
    throw error;
  }
}

const fifth: SimilarFacts = {
  group: {
    id: 'feedback.created:fb_1',
    size: 5,
    first: { key: 'feedback.created:fb_1', recordId: 'fb_1' },
  },
  matches: [],
  crossed: [{ atLeast: 5, withinMs: HOUR }],
};

describe('a rule that targets the first record', () => {
  it("PATCHes the group's first record, not this one", async () => {
    const handler = handlerFor([{ ...incident, notify: undefined }]);
    const result = await handle(handler, { id: 'fb_5', priority_id: 3 }, fifth);
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'PATCH', path: '/v1/feedback/fb_1', body: { priority_id: 1 } },
    ]);
    expect(result).toMatchObject({ sent: false, firstSent: true, patch: {} });
  });

  it('sends nothing for the deliveries that did not cross the window', async () => {
    const handler = handlerFor([{ ...incident, notify: undefined }]);
    await handle(handler, { id: 'fb_6' }, { ...fifth, crossed: [] });
    await handle(handler, { id: 'fb_7' });
    expect(api.requests).toEqual([]);
    expect(chat.requests).toEqual([]);
  });
});

describe('a rule that notifies', () => {
  it('posts the rule, the title, the group size and a link to the URL, after the PATCH', async () => {
    const handler = handlerFor([incident]);
    const result = await handle(handler, { id: 'fb_5', title: 'Pay <button> stays grey' }, fifth);
    expect(chat.requests).toHaveLength(1);
    const [posted] = chat.requests;
    expect(posted).toMatchObject({ method: 'POST', path: SECRET_PATH });
    expect(posted?.headers['content-type']).toBe('application/json');
    expect(posted?.body).toEqual({
      text: 'incident (5 similar reports): Pay &lt;button&gt; stays grey https://feedback.example.com/admin/deliveries/feedback.created%3Afb_5',
      rule: 'incident',
      title: 'Pay <button> stays grey',
      groupSize: 5,
      link: 'https://feedback.example.com/admin/deliveries/feedback.created%3Afb_5',
    });
    expect(api.requests.at(-1)!.at).toBeLessThanOrEqual(posted!.at);
    expect(result.notified).toEqual(['SLACK_WEBHOOK_URL']);
  });

  it('cuts a long title to 200 characters without cutting an emoji in two', async () => {
    const handler = handlerFor([incident]);
    await handle(handler, { id: 'fb_6', title: `${'a'.repeat(198)}${'😀'.repeat(3)}` }, fifth);
    const { title, text } = chat.requests[0]?.body as { title: string; text: string };
    // Cut through the pair, its first half was left alone: `\ud83d` in the JSON, � in Slack.
    expect(title).toBe(`${'a'.repeat(198)}…`);
    expect(text).toContain(`: ${'a'.repeat(198)}… https://`);
  });

  it('notifies without grouping, with no group size and a path for a link', async () => {
    const handler = handlerFor(
      [
        {
          name: 'low',
          when: { field: 'rating', lte: 2 },
          notify: { urlFrom: 'SLACK_WEBHOOK_URL' },
        },
      ],
      { consoleUrl: undefined },
    );
    await handle(handler, { id: 'fb_9', rating: 1 });
    expect(chat.requests[0]?.body).toMatchObject({
      groupSize: null,
      title: '',
      link: '/admin/deliveries/feedback.created%3Afb_9',
    });
    expect(api.requests).toEqual([]);
  });

  it('fails the attempt on a 500, naming the variable and not the URL', async () => {
    chat.respondWith(() => ({ status: 500, body: { error: 'down' } }));
    const handler = handlerFor([incident]);
    const failed = await handle(handler, { id: 'fb_5' }, fifth).catch((error: unknown) => error);
    expect(isNotifyError(failed)).toBe(true);
    expect((failed as Error).message).toBe('notify SLACK_WEBHOOK_URL: answered 500');
  });

  it('fails the attempt when the URL does not answer in time', async () => {
    chat.respondWith(() => 'hang');
    const handler = handlerFor([incident], { notifyTimeoutMs: 200 });
    const failed = await handle(handler, { id: 'fb_5' }, fifth).catch((error: unknown) => error);
    expect((failed as Error).message).toBe('notify SLACK_WEBHOOK_URL: no answer within 200 ms');
  });

  it('fails the attempt when nothing listens, without the address in the error', async () => {
    const gone = await startFakeFeedbackApi();
    await gone.close();
    const handler = handlerFor([incident], {}, `${gone.url}${SECRET_PATH}`);
    const failed = await handle(handler, { id: 'fb_5' }, fifth).catch((error: unknown) => error);
    expect((failed as Error).message).toBe('notify SLACK_WEBHOOK_URL: no answer (ECONNREFUSED)');
    expect(JSON.stringify(failed)).not.toContain(gone.url);
  });

  it('in dry run, logs the variable it would post to and sends nothing', async () => {
    const handler = handlerFor([incident], { dryRun: true });
    const result = await handle(handler, { id: 'fb_5' }, fifth);
    expect(chat.requests).toEqual([]);
    expect(api.requests).toEqual([]);
    const line = lines.map((text) => JSON.parse(text) as Record<string, unknown>)[0];
    expect(line).toMatchObject({
      msg: 'triage dry run: would PATCH',
      triage: {
        matched: ['incident'],
        first: { recordId: 'fb_1', patch: { priority_id: 1 } },
        notify: ['SLACK_WEBHOOK_URL'],
      },
    });
    expect(result).toMatchObject({ sent: false, notify: [{ urlFrom: 'SLACK_WEBHOOK_URL' }] });
    expect(result).not.toHaveProperty('notified');
  });
});

describe('a notify run in the worker', () => {
  it('is retried after a 500 and posts again, with the URL in no log line', async () => {
    const env = await createTestWorkerEnv();
    try {
      let answers = 0;
      chat.respondWith(() => ({ status: (answers += 1) === 1 ? 500 : 200 }));
      const handler = handlerFor([
        {
          name: 'low',
          when: { field: 'rating', lte: 2 },
          set: { priority_id: 3 },
          notify: { urlFrom: 'SLACK_WEBHOOK_URL' },
        },
      ]);
      await env.startWorker({
        api: createApiClient({ baseUrl: api.url, token: API_TOKEN }),
        handlers: [handler],
      });
      await env.deliver({ id: 'fb_low', rating: 1, title: 'cant pay!!' });
      await env.completedRuns(1, 15_000);
      expect(chat.requests.map(({ path }) => path)).toEqual([SECRET_PATH, SECRET_PATH]);
      // The PATCH came before the failed notify, and again on the retry: same fields, harmless.
      expect(api.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
        'PATCH /v1/feedback/fb_low',
        'PATCH /v1/feedback/fb_low',
      ]);
      const logged = JSON.stringify(env.logs);
      expect(logged).toContain('notify SLACK_WEBHOOK_URL: answered 500');
      expect(logged).not.toContain(SECRET_PATH);
      expect(logged).not.toContain(chat.url);
    } finally {
      await env.close();
    }
  });
});

describe('starting a worker with rules that notify', () => {
  const rulesFile = () => {
    const path = join(mkdtempSync(join(tmpdir(), 'triage-')), 'rules.json');
    writeFileSync(path, JSON.stringify({ rules: [incident] }));
    return path;
  };

  it('refuses to start when the variable a notify names is not set, naming it', async () => {
    const config = loadWorkerConfig({ TRIAGE_RULES: rulesFile(), TRIAGE_DRY_RUN: 'true' });
    const refused = await resolveHandlers(config).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TriageRulesError);
    expect((refused as Error).message).toMatch(
      /rule "incident" notifies the URL in SLACK_WEBHOOK_URL, which is not set/,
    );
  });

  it('refuses to start when the variable holds a URL with a user and password, without repeating it', async () => {
    // Before, it started, and fetch refused every message ("no answer"), 8 attempts each.
    const config = loadWorkerConfig({
      TRIAGE_RULES: rulesFile(),
      TRIAGE_DRY_RUN: 'true',
      SLACK_WEBHOOK_URL: chat.url.replace('://', '://bot:s3cr3tPassw0rd@') + SECRET_PATH,
    });
    const refused = await resolveHandlers(config).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TriageRulesError);
    const { message } = refused as Error;
    expect(message).toMatch(/SLACK_WEBHOOK_URL, which holds a user or password/);
    expect(message).not.toMatch(/s3cr3t/);
  });

  it('starts when it is set, declaring the windows of its rules', async () => {
    const config = loadWorkerConfig({
      TRIAGE_RULES: rulesFile(),
      TRIAGE_DRY_RUN: 'true',
      SLACK_WEBHOOK_URL: `${chat.url}${SECRET_PATH}`,
    });
    const [handler] = await resolveHandlers(config);
    expect(handler?.similarWindows).toEqual([{ atLeast: 5, withinMs: HOUR }]);
  });
});
